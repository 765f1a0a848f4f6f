// Command worker runs Durable Ralph sessions: it polls a Temporal task queue
// for Session workflows and their RunIteration activities, which spawn the
// coding agent in the session's workspace on this machine.
//
// With --dev it first starts an embedded Temporal server and its Web UI in
// the same process, persisted to a SQLite file under --state-dir, so one
// machine needs nothing else:
//
//	worker --dev
//
// Without --dev it connects like the temporal CLI does (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_PROFILE, the CLI's config file). Every other
// setting is described in package config.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/metrics"
	"github.com/durable-ralph/ralph/internal/ralph"
	"github.com/durable-ralph/ralph/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run Durable Ralph sessions on this machine",
		Long: "worker polls a Temporal task queue and runs Ralph sessions and their agent iterations.\n" +
			"With --dev it embeds a Temporal server (SQLite under --state-dir) and the Web UI.",
		// "worker help" is the one argument there is.
		Args:          cobra.MatchAll(cobra.MaximumNArgs(1), cobra.OnlyValidArgs),
		ValidArgs:     []string{"help"},
		Version:       version.Read().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return cmd.Help()
			}
			cfg, err := config.Load(cmd.Flags(), "")
			if err != nil {
				return err
			}
			return run(cmd.Context(), cfg)
		},
	}
	config.AddFlagGroups(cmd.Flags(), config.ConnectionFlags|config.WorkerFlags)
	cmd.SetVersionTemplate("worker {{.Version}}\n")
	return cmd
}

func run(ctx context.Context, cfg config.Config) error {
	for _, n := range cfg.Notices() {
		fmt.Fprintln(os.Stderr, n)
	}
	cdc, err := ralph.LoadCodec(cfg)
	if err != nil {
		return err
	}
	if cfg.Codec.Server != "" {
		stop, err := ralph.ServeCodec(cfg.Codec.Server, cdc)
		if err != nil {
			return err
		}
		defer stop()
		fmt.Fprintf(os.Stderr, "Codec server:    http://%s (for the Temporal UI's codec endpoint)\n", cfg.Codec.Server)
	}
	hostPort, namespace := "", ""
	if cfg.Dev.Enabled {
		srv, err := ralph.StartDevServer(ctx, cfg.Dev, cfg.Codec.Server)
		if err != nil {
			return err
		}
		defer srv.Stop()
		hostPort, namespace = srv.Address(), srv.Namespace()
		fmt.Fprintf(os.Stderr, "Temporal server: %s (namespace %s, state in %s)\n", srv.Address(), srv.Namespace(), cfg.Dev.StateDir)
		if ui := srv.UIURL(); ui != "" {
			fmt.Fprintf(os.Stderr, "Temporal UI:     %s/namespaces/%s/workflows\n", ui, srv.Namespace())
		}
	}
	opts, err := ralph.ClientOptions(hostPort, namespace, cdc)
	if err != nil {
		return err
	}
	wopts := ralph.WorkerOptionsOf(cfg)
	if cfg.Worker.MetricsAddr != "" {
		m, err := metrics.New()
		if err != nil {
			return err
		}
		opts.MetricsHandler = m.SDKHandler()
		wopts.Metrics = m
	}
	c, err := ralph.Dial(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()

	w := ralph.NewWorker(c, wopts, ralph.NewAgent(cfg), ralph.NewGitHub(cfg))
	if m := wopts.Metrics; m != nil {
		m.WatchSessions(c, cfg.Worker.HostID, ralph.SessionsRefresh)
		stop, addr, err := m.Serve(cfg.Worker.MetricsAddr)
		if err != nil {
			return err
		}
		defer stop()
		fmt.Fprintf(os.Stderr, "Metrics:         http://%s/metrics\n", addr)
	}
	fmt.Fprintf(os.Stderr, "Worker polling task queues %q and %q on %s (host %s, at most %d agents at once)\n",
		cfg.TaskQueue, contract.HostTaskQueue(cfg.TaskQueue, cfg.Worker.HostID), opts.HostPort, cfg.Worker.HostID, cfg.Worker.MaxAgents)
	if err := w.Run(interruptFrom(ctx)); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// interruptFrom adapts ctx to the channel worker.Run waits on.
func interruptFrom(ctx context.Context) <-chan any {
	ch := make(chan any, 1)
	go func() {
		<-ctx.Done()
		ch <- struct{}{}
	}()
	return ch
}
