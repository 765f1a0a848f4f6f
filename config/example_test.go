package config_test

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/durable-ralph/ralph/config"
)

// newCommand returns a command like the starter's: it takes the workspace as
// an optional argument and prints part of its configuration.
func newCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "ralph [workspace]",
		Args:          cobra.MaximumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var workspace string
			if len(args) > 0 {
				workspace = args[0]
			}
			cfg, err := config.Load(cmd.Flags(), workspace)
			if err != nil {
				return err
			}
			fmt.Printf("agent: %q\n", cfg.Agent.Command)
			fmt.Println("max iterations:", cfg.Limits.MaxIterations)
			fmt.Println("max runtime:", cfg.Limits.MaxRuntime)
			fmt.Println("config file:", cfg.File != "")
			return nil
		},
	}
	config.AddFlags(cmd.Flags())
	return cmd
}

func ExampleLoad() {
	workspace, err := os.MkdirTemp("", "ralph-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(workspace)

	cmd := newCommand()
	cmd.SetArgs([]string{
		"--agent-command", "claude --append-system-prompt 'be brief'",
		"--max-iterations", "10",
		workspace,
	})
	if err := cmd.Execute(); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// agent: ["claude" "--append-system-prompt" "be brief"]
	// max iterations: 10
	// max runtime: 4h0m0s
	// config file: false
}

func ExampleLoad_invalid() {
	workspace, err := os.MkdirTemp("", "ralph-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(workspace)

	cmd := newCommand()
	cmd.SetArgs([]string{"--max-iterations=-1", workspace})
	if err := cmd.Execute(); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// error: invalid limits.max-iterations (--max-iterations, RALPH_LIMITS_MAX_ITERATIONS) = -1: must be at least 1
}
