// Command worker runs Durable Ralph sessions: it polls a Temporal task queue
// for Session workflows and their RunIteration activities, which spawn the
// coding agent in the session's workspace on this machine.
//
// With --dev it uses the Temporal dev server of the state directory
// (--state-dir), with its Web UI and its state in SQLite, starting it in the
// background when none runs there, so one machine needs nothing else:
//
//	worker --dev
//
// The server outlives the worker (starter dev stop stops it). Without --dev
// it connects like the temporal CLI does (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_PROFILE, the CLI's config file) and, when
// those name no server, to the dev server of the state directory if one
// runs. Every other setting is described in package config.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"syscall"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/app/metrics"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/devserver"
	"github.com/durable-ralph/ralph/internal/selfguard"
	"github.com/durable-ralph/ralph/internal/version"
	"github.com/durable-ralph/ralph/webhook"
)

func main() {
	// First of all: the worker holds the GitHub token, the codec key and
	// the agents' keys; other processes of this user (an agent out of its
	// sandbox) must not read them from /proc/<pid>/environ or its memory.
	if err := selfguard.Protect(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	endProfile := cpuProfile()
	err := newRootCmd().ExecuteContext(ctx)
	endProfile()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// cpuProfileVar names the file a CPU profile of the whole run is written
// to, for `go tool pprof` (docs/development.md): a diagnostic, not a
// setting. The profile is complete once the worker stopped on SIGINT or
// SIGTERM.
const cpuProfileVar = "RALPH_WORKER_CPU_PROFILE"

// cpuProfile starts the CPU profile cpuProfileVar asks for, and returns
// what ends it.
func cpuProfile() (end func()) {
	path := os.Getenv(cpuProfileVar)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker: %s: %v\n", cpuProfileVar, err)
		os.Exit(1)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

func newRootCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run Durable Ralph sessions on this machine",
		Long: "worker polls a Temporal task queue and runs Ralph sessions and their agent iterations.\n" +
			"With --dev it uses the Temporal dev server of --state-dir (SQLite, with the Web UI), and\n" +
			"starts it in the background when none runs there; the server outlives the worker.",
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
	// The worker reads github.api-url and github.token-env too: its
	// GitHub App's tokens come from that API, and it redacts that token.
	config.AddFlagGroups(cmd.Flags(), config.ConnectionFlags|config.WorkerFlags|config.GitHubFlags)
	cmd.SetVersionTemplate("worker {{.Version}}\n")
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.AddCommand(newDevServerCmd())
	return cmd
}

// devServerCmd is the name of the hidden command that runs the dev server
// in the foreground: worker --dev runs it in the background.
const devServerCmd = "dev-server"

// newDevServerCmd is `worker dev-server`, hidden.
func newDevServerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:    devServerCmd,
		Short:  "Run the Temporal dev server of the state directory in the foreground",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags(), "")
			if err != nil {
				return err
			}
			return app.ServeDev(cmd.Context(), cfg, os.Stderr)
		},
	}
	config.AddFlagGroups(cmd.Flags(), config.ConnectionFlags|config.WorkerFlags)
	return cmd
}

func run(ctx context.Context, cfg config.Config) error {
	for _, n := range cfg.Notices() {
		fmt.Fprintln(os.Stderr, n)
	}
	cdc, err := app.LoadCodec(cfg)
	if err != nil {
		return err
	}
	var hookSecret []byte
	if cfg.GitHub.WebhookListen != "" {
		if hookSecret, err = app.WebhookSecret(cfg); err != nil {
			return err
		}
	}
	if cfg.Codec.Server != "" {
		stop, err := app.ServeCodec(cfg.Codec.Server, cdc)
		if err != nil {
			return err
		}
		defer stop()
		fmt.Fprintf(os.Stderr, "Codec server:    http://%s (for the Temporal UI's codec endpoint)\n", cfg.Codec.Server)
	}
	hostPort, namespace, err := devServer(ctx, cfg)
	if err != nil {
		return err
	}
	opts, err := app.ClientOptions(hostPort, namespace, cdc)
	if err != nil {
		return err
	}
	wopts := app.WorkerOptionsOf(cfg)
	if cfg.Worker.MetricsAddr != "" {
		m, err := metrics.New()
		if err != nil {
			return err
		}
		opts.MetricsHandler = m.SDKHandler()
		wopts.Metrics = m
	}
	c, err := app.Dial(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()

	w, err := newWorker(ctx, cfg, c, &wopts)
	if err != nil {
		return err
	}
	stop, err := serveEndpoints(c, cfg, wopts, hookSecret)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(os.Stderr, "Worker polling task queues %q and %q on %s (host %s, at most %d agents at once)\n",
		cfg.TaskQueue, contract.HostTaskQueue(cfg.TaskQueue, cfg.Worker.HostID), opts.HostPort, cfg.Worker.HostID, cfg.Worker.MaxAgents)
	fmt.Fprintln(os.Stderr, app.SandboxNotice())
	if n := app.GitHubNotice(cfg); n != "" {
		fmt.Fprintln(os.Stderr, n)
	}
	if err := app.StartChatInbox(ctx, c, cfg.TaskQueue, wopts.Chat); err != nil {
		return err
	}
	if err := w.Run(interruptFrom(ctx)); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// serveEndpoints serves what cfg asks the worker to serve besides its
// task queues: metrics, GitHub's webhooks, the Slack app's slash
// commands. stop stops them all.
func serveEndpoints(c client.Client, cfg config.Config, wopts app.WorkerOptions, hookSecret []byte) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if m := wopts.Metrics; m != nil {
		m.WatchSessions(c, cfg.Worker.HostID, app.SessionsRefresh)
		s, addr, err := m.Serve(cfg.Worker.MetricsAddr)
		if err != nil {
			return nil, err
		}
		stops = append(stops, s)
		fmt.Fprintf(os.Stderr, "Metrics:         http://%s/metrics\n", addr)
	}
	if cfg.GitHub.WebhookListen != "" {
		s, addr, err := app.ServeWebhook(c, cfg, hookSecret, log)
		if err != nil {
			return nil, err
		}
		stops = append(stops, s)
		fmt.Fprintf(os.Stderr, "GitHub webhook:  http://%s%s\n", addr, webhook.Path)
	}
	if cfg.Notify.Slack.CommandsListen != "" {
		s, addr, err := app.ServeSlackCommands(c, cfg, wopts.Chat, log)
		if err != nil {
			return nil, err
		}
		stops = append(stops, s)
		fmt.Fprintf(os.Stderr, "Slack commands:  http://%s%s\n", addr, app.SlackCommandsPath)
	}
	return stop, nil
}

// newWorker makes the worker of cfg with its GitHub and chat activities
// (the latter into wopts.Chat).
func newWorker(ctx context.Context, cfg config.Config, c client.Client, wopts *app.WorkerOptions) (*app.Worker, error) {
	gh, err := app.NewGitHub(cfg)
	if err != nil {
		return nil, err
	}
	if wopts.Chat, err = app.NewChat(ctx, cfg, c, os.Stderr); err != nil {
		return nil, err
	}
	return app.NewWorker(c, *wopts, app.NewAgent(cfg), gh), nil
}

// devServer is the address and namespace of the dev server of cfg's state
// directory, started in the background with --dev when none runs; "" when
// TEMPORAL_ADDRESS (or a profile) names a server and --dev is not given, or
// no dev server runs.
func devServer(ctx context.Context, cfg config.Config) (hostPort, namespace string, err error) {
	var rec devserver.Record
	started := false
	if cfg.Dev.Enabled {
		exe, err := os.Executable()
		if err != nil {
			return "", "", fmt.Errorf("find this program to start the dev server with: %w", err)
		}
		rec, started, err = app.EnsureDevServer(ctx, cfg, append([]string{exe, devServerCmd}, app.DevServeArgs(cfg)...))
		if err != nil {
			return "", "", err
		}
	} else {
		if addr, err := app.ConfiguredAddress(); err != nil || addr != "" {
			return "", "", err
		}
		ok := false
		if rec, ok, err = app.FindDevServer(ctx, cfg.Dev.StateDir); err != nil || !ok {
			return "", "", err
		}
	}
	how := "running"
	if started {
		how = "started now, in the background: starter dev stop stops it"
	}
	fmt.Fprintf(os.Stderr, "Temporal server: %s (namespace %s, state in %s; dev server PID %d, %s)\n", rec.Address, rec.Namespace, rec.StateDir, rec.PID, how)
	if rec.UIURL != "" {
		fmt.Fprintf(os.Stderr, "Temporal UI:     %s/namespaces/%s/workflows\n", rec.UIURL, rec.Namespace)
	}
	return rec.Address, rec.Namespace, nil
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
