package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/internal/codec"
	"github.com/durable-ralph/ralph/internal/ralph"
)

// connection is a connected client, the configuration it was made from
// and what the commands print about it.
type connection struct {
	client    client.Client
	cfg       config.Config
	namespace string
	uiURL     string
	codec     *codec.Codec
	// dataConverter decodes payloads the client does not decode itself
	// (heartbeat details of a pending activity).
	dataConverter converter.DataConverter
	// started says this process started the embedded server (--dev with
	// none answering): it is gone when the command exits.
	started bool
	// closers undo what connecting did, last first.
	closers []func()
}

// onClose makes close call f, before what was there to close already.
func (c *connection) onClose(f func()) { c.closers = append(c.closers, f) }

// close undoes the connection: workers, client, log and server.
func (c *connection) close() {
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	c.closers = nil
}

// connect dials the server cfg names. With --dev it uses the embedded
// server's address and, when nothing answers there, starts the server in
// this process (conn.started).
func (cctx *commandContext) connect(cfg config.Config) (conn *connection, err error) {
	cdc, err := ralph.LoadCodec(cfg)
	if err != nil {
		return nil, err
	}
	conn = &connection{cfg: cfg, codec: cdc}
	defer func() {
		if err != nil {
			conn.close()
		}
	}()
	hostPort, namespace := serverOf(cfg)
	if cfg.Dev.Enabled {
		if !ralph.Reachable(hostPort) {
			srv, err := ralph.StartDevServer(cctx, cfg.Dev, cfg.Codec.Server)
			if err != nil {
				return nil, err
			}
			conn.onClose(srv.Stop)
			conn.started = true
		}
		conn.uiURL = ralph.DevUIURL(cfg.Dev)
	}
	opts, err := ralph.ClientOptions(hostPort, namespace, cdc)
	if err != nil {
		return nil, err
	}
	if conn.started {
		if err := cctx.logToFile(conn, &opts, hostPort); err != nil {
			return nil, err
		}
	}
	if !cfg.Dev.Enabled && !ralph.Reachable(opts.HostPort) {
		return nil, fmt.Errorf("%w at %s: start a server (`worker --dev`), set TEMPORAL_ADDRESS, or use --dev", ralph.ErrNoServer, opts.HostPort)
	}
	c, err := ralph.Dial(cctx, opts)
	if err != nil {
		return nil, err
	}
	conn.onClose(c.Close)
	conn.client, conn.namespace, conn.dataConverter = c, opts.Namespace, opts.DataConverter
	if conn.dataConverter == nil {
		conn.dataConverter = converter.GetDefaultDataConverter()
	}
	return conn, nil
}

// logToFile sends the log of the worker this process runs for the
// embedded server it started to a file: its lines have no place between
// the ones this command prints.
func (cctx *commandContext) logToFile(conn *connection, opts *client.Options, hostPort string) error {
	dev := conn.cfg.Dev
	path := filepath.Join(dev.StateDir, "starter.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open the worker's log: %w", err)
	}
	conn.onClose(func() { f.Close() })
	opts.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})))
	fmt.Fprintf(cctx.stderr, "Started embedded Temporal server on %s (state in %s, log in %s)\n", hostPort, dev.StateDir, path)
	return nil
}

// dial loads the configuration of cmd's flags and connects. With --dev
// and no server running, it opens the saved state in this process, with a
// worker that runs workflow code only: queries and updates need a worker,
// and no agent may start here. conn.close undoes it all.
func (cctx *commandContext) dial(cmd *cobra.Command) (*connection, error) {
	cfg, err := config.Load(cmd.Flags(), "")
	if err != nil {
		return nil, err
	}
	conn, err := cctx.connect(cfg)
	if err != nil || !conn.started {
		return conn, err
	}
	w := ralph.NewWorkflowWorker(conn.client, cfg.TaskQueue)
	if err := w.Start(); err != nil {
		conn.close()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	conn.onClose(w.Stop)
	return conn, nil
}

// connectToRun connects for the commands that start workflows (run, plan,
// queue), after printing cfg's notices. When it starts the embedded
// server, nobody else serves it, so this process is the worker too (with
// agents and GitHub activities), for as long as the command runs.
func (cctx *commandContext) connectToRun(cfg config.Config) (*connection, error) {
	for _, n := range cfg.Notices() {
		fmt.Fprintln(cctx.stderr, n)
	}
	conn, err := cctx.connect(cfg)
	if err != nil || !conn.started {
		return conn, err
	}
	w := ralph.NewWorker(conn.client, ralph.WorkerOptionsOf(cfg), ralph.NewAgent(cfg), ralph.NewGitHub(cfg))
	if err := w.Start(); err != nil {
		conn.close()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	conn.onClose(w.Stop)
	return conn, nil
}

// warnNoToken says so when this process is the worker of a queue and has
// no GitHub token.
func (cctx *commandContext) warnNoToken(conn *connection) {
	if !conn.started {
		return
	}
	if name, token := github.Token(os.Getenv, conn.cfg.GitHub.TokenEnv); token == "" {
		fmt.Fprintf(cctx.stderr, "warning: $%s is empty here, and this process is the worker: the queue will fail its preflight\n", name)
	}
}

// serverOf is the address and namespace cfg points at: the embedded
// server's with --dev, else "" for the temporal CLI's settings.
func serverOf(cfg config.Config) (hostPort, namespace string) {
	if !cfg.Dev.Enabled {
		return "", ""
	}
	return fmt.Sprintf("%s:%d", cfg.Dev.IP, cfg.Dev.Port), cfg.Dev.Namespace
}

// workflowURL links to a workflow in the Temporal UI, or is "" when the
// UI address is unknown.
func (c *connection) workflowURL(id string) string {
	if c.uiURL == "" {
		return ""
	}
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", c.uiURL, c.namespace, id)
}

// lastingURL is workflowURL for what a command prints before it exits:
// "" when the server this command started is gone by then.
func (c *connection) lastingURL(id string) string {
	if c.started {
		return ""
	}
	return c.workflowURL(id)
}

// suggest is a command line to print: this program, the subcommand
// (with --dev when this connection is to the embedded server, so that the
// command reaches the same server), then args.
func (c *connection) suggest(sub string, args ...string) string {
	if c != nil && c.cfg.Dev.Enabled {
		sub += " --dev"
	}
	return commandLine(sub, args...)
}
