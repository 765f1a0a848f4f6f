package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/tasks"
)

func newInitCmd() *cobra.Command {
	var noCommit bool
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Set a repository up for Ralph: a commented ralph.yaml and, when there is no task file, an example prd.json",
		Long: "init writes a commented ralph.yaml into the git repository DIR (default: the current directory)\n" +
			"and, when DIR has no task file, an example prd.json with two small stories, then commits what\n" +
			"it wrote (--no-commit prints what to commit instead). Files that exist are left alone.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) > 0 {
				dir = args[0]
			}
			return initWorkspace(cmd.Context(), dir, noCommit, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&noCommit, "no-commit", false, "write the files but do not commit them")
	return cmd
}

// initWorkspace writes what a first session on dir needs and commits it.
func initWorkspace(ctx context.Context, dir string, noCommit bool, out io.Writer) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if top, err := gitOutput(ctx, abs, "rev-parse", "--show-toplevel"); err != nil {
		return fmt.Errorf("%s is not a git repository: run git init %s first", abs, dir)
	} else if top != abs {
		if real, err := filepath.EvalSymlinks(abs); err != nil || real != top {
			return fmt.Errorf("%s is inside the git repository %s: run init (and sessions) at its top, %s", abs, top, top)
		}
	}

	var wrote []string
	write := func(name, content string) error {
		path := filepath.Join(abs, name)
		if _, err := os.Stat(path); err == nil {
			fmt.Fprintf(out, "%s exists: left as it is\n", name)
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		wrote = append(wrote, name)
		fmt.Fprintf(out, "wrote %s\n", name)
		return nil
	}
	if err := write("ralph.yaml", config.Template()); err != nil {
		return err
	}
	if mode, err := tasks.Detect(abs); err == nil {
		fmt.Fprintf(out, "task file: %s (%s mode)\n", mode.File(), mode)
	} else if errors.Is(err, tasks.ErrNoTaskFile) {
		prd, err := examplePRD(filepath.Base(abs))
		if err != nil {
			return err
		}
		if err := write(contract.ModePRD.File(), prd); err != nil {
			return err
		}
	} else {
		return err
	}

	switch {
	case len(wrote) == 0:
		fmt.Fprintln(out, "Nothing to write.")
	case noCommit:
		fmt.Fprintf(out, "Commit them before the first run:\n  git -C %s add %s && git -C %s commit -m \"Set up Ralph\"\n", dir, strings.Join(wrote, " "), dir)
	default:
		args := append([]string{"add", "--"}, wrote...)
		if _, err := gitOutput(ctx, abs, args...); err != nil {
			return fmt.Errorf("git add: %w", err)
		}
		msg := "ralph: set up Ralph (" + strings.Join(wrote, ", ") + ")"
		commit := append([]string{"commit", "--quiet", "-m", msg, "--"}, wrote...)
		if _, err := gitOutput(ctx, abs, commit...); err != nil {
			return fmt.Errorf("commit %s: %w (commit them yourself before the first run)", strings.Join(wrote, ", "), err)
		}
		fmt.Fprintf(out, "committed %s\n", strings.Join(wrote, ", "))
	}
	fmt.Fprintf(out, "Next: edit the stories in the task file, then run\n  %s\n", suggestRun(dir))
	return nil
}

// suggestRun is the run command for dir, in the form the user ran init.
func suggestRun(dir string) string {
	return strings.Join([]string{self(), "run", "--dev", "--follow", dir}, " ")
}

// examplePRD is a prd.json in snarktank/ralph's format with two small
// stories any repository can take.
func examplePRD(project string) (string, error) {
	type story struct {
		ID                 string   `json:"id"`
		Title              string   `json:"title"`
		Description        string   `json:"description"`
		AcceptanceCriteria []string `json:"acceptanceCriteria"`
		Priority           int      `json:"priority"`
		Passes             bool     `json:"passes"`
		Notes              string   `json:"notes"`
	}
	prd := struct {
		Project     string  `json:"project"`
		BranchName  string  `json:"branchName"`
		Description string  `json:"description"`
		UserStories []story `json:"userStories"`
	}{
		Project:     project,
		BranchName:  "ralph/getting-started",
		Description: "An example to try Ralph on: replace these stories with your own.",
		UserStories: []story{{
			ID: "US-001", Title: "Describe the project in RALPH-NOTES.md",
			Description:        "As a new contributor, I want a short description of this project so that I know where to start.",
			AcceptanceCriteria: []string{"RALPH-NOTES.md exists at the top of the repository", "It says in one paragraph what the project does"},
			Priority:           1,
		}, {
			ID: "US-002", Title: "List how to build and test the project",
			Description:        "As a new contributor, I want the commands that build and test the project so that I can check my changes.",
			AcceptanceCriteria: []string{"RALPH-NOTES.md has a section with the build and test commands", "Each command was run once and works"},
			Priority:           2,
		}},
	}
	data, err := json.MarshalIndent(prd, "", "  ")
	if err != nil {
		return "", err
	}
	return string(data) + "\n", nil
}

// gitOutput runs git in dir and returns its trimmed output.
func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}
