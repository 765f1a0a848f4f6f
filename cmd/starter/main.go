// Command starter is the command line people type to run and watch Durable
// Ralph sessions:
//
//	starter init [DIR]                     a commented ralph.yaml and an example prd.json, committed
//	starter run [DIR] [--follow] [--dev]   start (or attach to) the session for DIR
//	starter prompt [DIR]                   the prompt the next iteration would get
//	starter status [DIR|ID]                everything the session's status query knows
//	starter list [--status STATE]          sessions and their state
//	starter stop [DIR|ID]                  finish the current iteration, then end
//	starter respond [DIR|ID] --approve | --reject [--reason R] | --answer TEXT
//	starter guide [DIR|ID] TEXT            add guidance to the next prompt
//	starter pause|resume [DIR|ID]
//	starter set-limits [DIR|ID] [--max-iterations N] [--max-runtime D] [--max-cost USD]
//	starter queue [DIR] [--follow] [--until-idle]   the GitHub issue queue of a clone
//	starter poke [ID|--queue DIR]          an idle queue looks for issues now
//
// It connects like the temporal CLI (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_PROFILE). With --dev it talks to the embedded server of
// `worker --dev`, and `run --dev` starts that server and a worker itself when
// none answers. Every other setting is described in package config.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/codec"
	"github.com/durable-ralph/ralph/internal/ralph"
	"github.com/durable-ralph/ralph/internal/version"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first interrupt ends the command gracefully (a worker in
		// this process lets its agent stop); a second one ends it at once.
		<-sigs
		cancel()
		<-sigs
		fmt.Fprintln(os.Stderr, "Stopped at once: the session is saved, and its iteration resumes on the next run.")
		os.Exit(130)
	}()
	err := newRootCmd(os.Stdout, os.Stderr).ExecuteContext(ctx)
	signal.Stop(sigs)
	cancel()
	os.Exit(exitCode(err, os.Stderr))
}

// exitError carries a process exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "starter:", explain(ee.err))
		}
		return ee.code
	}
	if errors.Is(err, context.Canceled) {
		return 130
	}
	fmt.Fprintln(stderr, "starter:", explain(err))
	return 1
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "starter",
		Short:         "Run and watch Durable Ralph sessions",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Version = version.Read().String()
	root.SetVersionTemplate("starter {{.Version}}\n")
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "print a failure's whole chain of workflow and activity errors, not only its cause")
	root.SetOut(stdout)
	root.SetErr(stderr)
	const (
		dials   = config.ConnectionFlags
		session = config.SessionFlags | config.ConnectionFlags | config.WorkerFlags
		queue   = session | config.QueueFlags
	)
	root.AddCommand(
		newInitCmd(),
		withFlags(newRunCmd(), session),
		withFlags(newPlanCmd(), session),
		withFlags(newPromptCmd(), config.SessionFlags|config.ConnectionFlags),
		withFlags(newCleanCmd(), dials),
		withQueueFlag(withFlags(newStatusCmd(), dials)),
		withFlags(newListCmd(), dials),
		withQueueFlag(withFlags(newStopCmd(), dials)),
		withFlags(newRespondCmd(), dials),
		withQueueFlag(withFlags(newGuideCmd(), dials)),
		withFlags(newSetLimitsCmd(), dials),
		withQueueFlag(withFlags(newSignalCmd(contract.SignalPause, "Pause a session before its next iteration", "paused before the next iteration"), dials)),
		withQueueFlag(withFlags(newSignalCmd(contract.SignalResume, "Resume a paused session", "resumed"), dials)),
		withFlags(newQueueCmd(), queue),
		withQueueFlag(withFlags(newSignalCmd(contract.SignalPoke, "Make an idle issue queue look for ready issues now", "looks for ready issues now"), dials)),
	)
	return root
}

// withFlags gives cmd the flags of the settings in groups: session
// settings to the commands that start sessions, connection settings to
// every command that dials Temporal.
func withFlags(cmd *cobra.Command, groups config.Group) *cobra.Command {
	config.AddFlagGroups(cmd.Flags(), groups)
	return cmd
}

// withQueueFlag gives cmd --queue DIR, and --repo for a clone whose
// origin does not name its GitHub repository.
func withQueueFlag(cmd *cobra.Command) *cobra.Command {
	cmd.Flags().StringVar(&queueDir, "queue", "", "act on the issue queue of the clone in this directory")
	cmd.Flags().String("repo", "", "with --queue: the queue's GitHub repository as owner/name (default: from the clone's origin URL) ($RALPH_GITHUB_REPO)")
	return cmd
}

// connection is a connected client and what the commands print about it.
type connection struct {
	client    client.Client
	namespace string
	uiURL     string
	codec     *codec.Codec
	// dataConverter decodes payloads the client does not decode itself
	// (heartbeat details of a pending activity).
	dataConverter converter.DataConverter
	close         func()
}

// connect dials the configured server. With --dev it uses the embedded
// server's address and, when nothing answers there, starts the server in
// this process (reporting started).
func connect(ctx context.Context, cfg config.Config, stderr io.Writer) (conn *connection, started bool, err error) {
	uiURL := ""
	cdc, err := ralph.LoadCodec(cfg)
	if err != nil {
		return nil, false, err
	}
	hostPort, namespace := serverOf(cfg)
	var stopServer func()
	if cfg.Dev.Enabled {
		devHint = " --dev"
		if !ralph.Reachable(hostPort) {
			srv, err := ralph.StartDevServer(ctx, cfg.Dev, cfg.Codec.Server)
			if err != nil {
				return nil, false, err
			}
			stopServer = srv.Stop
			started = true
		}
		uiURL = ralph.DevUIURL(cfg.Dev)
	}
	opts, err := ralph.ClientOptions(hostPort, namespace, cdc)
	if err != nil {
		if stopServer != nil {
			stopServer()
		}
		return nil, false, err
	}
	closeLog := func() {}
	if started {
		// The worker this process runs logs to a file: its lines have no
		// place between the ones this command prints.
		path := filepath.Join(cfg.Dev.StateDir, "starter.log")
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			stopServer()
			return nil, false, fmt.Errorf("open the worker's log: %w", err)
		}
		closeLog = func() { f.Close() }
		opts.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})))
		fmt.Fprintf(stderr, "Started embedded Temporal server on %s (state in %s, log in %s)\n", hostPort, cfg.Dev.StateDir, path)
	}
	if !cfg.Dev.Enabled && !ralph.Reachable(opts.HostPort) {
		return nil, false, fmt.Errorf("%w at %s: start a server (`worker --dev`), set TEMPORAL_ADDRESS, or use --dev", ralph.ErrNoServer, opts.HostPort)
	}
	c, err := ralph.Dial(ctx, opts)
	if err != nil {
		if stopServer != nil {
			stopServer()
		}
		closeLog()
		return nil, false, err
	}
	dc := opts.DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	conn = &connection{client: c, namespace: opts.Namespace, uiURL: uiURL, codec: cdc, dataConverter: dc}
	conn.close = func() {
		c.Close()
		if stopServer != nil {
			stopServer()
		}
		closeLog()
	}
	return conn, started, nil
}

// serverOf is the address and namespace cfg points at: the embedded
// server's with --dev, else "" for the temporal CLI's settings.
func serverOf(cfg config.Config) (hostPort, namespace string) {
	if !cfg.Dev.Enabled {
		return "", ""
	}
	return fmt.Sprintf("%s:%d", cfg.Dev.IP, cfg.Dev.Port), cfg.Dev.Namespace
}

// workflowURL links to a session in the Temporal UI, or is "" when the UI
// address is unknown.
func (c *connection) workflowURL(id string) string {
	if c.uiURL == "" {
		return ""
	}
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", c.uiURL, c.namespace, id)
}
