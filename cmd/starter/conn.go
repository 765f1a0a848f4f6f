package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/codec"
	"github.com/durable-ralph/ralph/internal/devserver"
	"github.com/durable-ralph/ralph/internal/selfguard"
)

// connection is a connected client, the configuration it was made from
// and what the commands print about it.
type connection struct {
	client    client.Client
	cfg       config.Config
	namespace string
	// address is the server's host:port.
	address string
	uiURL   string
	codec   *codec.Codec
	// dataConverter decodes payloads the client does not decode itself
	// (heartbeat details of a pending activity).
	dataConverter converter.DataConverter
	// dev is the dev server of the state directory that this connection
	// reaches, found or started; nil for another server.
	dev *devserver.Record
	// started says this process is the worker of the sessions it starts
	// (run, plan, queue on a dev server that no standing worker serves):
	// it follows them to their end, and they wait for a worker when it
	// exits.
	started bool
	// watch says when the server is lost and back, once each time.
	watch serverWatch
	// closers undo what connecting did, last first.
	closers []func()
}

// onClose makes close call f, before what was there to close already.
func (c *connection) onClose(f func()) { c.closers = append(c.closers, f) }

// close undoes the connection: workers, client and log.
func (c *connection) close() {
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	c.closers = nil
}

// connect dials the server cfg names: TEMPORAL_ADDRESS or the temporal
// CLI's profile when one is set (and --dev is not), else the dev server
// of the state directory, whatever port it runs on. With --dev and no dev
// server running, it starts one in the background, which outlives this
// command.
func (cctx *commandContext) connect(cfg config.Config) (_ *connection, err error) {
	cdc, err := app.LoadCodec(cfg)
	if err != nil {
		return nil, err
	}
	// Not the named result: a failure returns nil, and the deferred close
	// must still undo what was done.
	conn := &connection{cfg: cfg, codec: cdc, watch: serverWatch{out: cctx.stderr}}
	defer func() {
		if err != nil {
			conn.close()
		}
	}()
	rec, err := cctx.devServer(cfg)
	if err != nil {
		return nil, err
	}
	hostPort, namespace := "", ""
	if rec != nil {
		conn.dev, conn.uiURL = rec, rec.UIURL
		hostPort, namespace = rec.Address, rec.Namespace
	}
	opts, err := app.ClientOptions(hostPort, namespace, cdc)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		// What the client and a worker of this process log has no place
		// between the lines the command prints.
		if err := cctx.logToFile(conn, &opts); err != nil {
			return nil, err
		}
	}
	if rec == nil && !app.Reachable(opts.HostPort) {
		return nil, fmt.Errorf("%w at %s, and no dev server runs on %s: start one with `%s` (or give --dev to any command), or set TEMPORAL_ADDRESS",
			app.ErrNoServer, opts.HostPort, cfg.Dev.StateDir, commandLine("dev start"))
	}
	c, err := app.Dial(cctx, opts)
	if err != nil {
		return nil, dialFailed(opts.HostPort, rec != nil, err)
	}
	conn.onClose(c.Close)
	conn.client, conn.namespace, conn.dataConverter = c, opts.Namespace, opts.DataConverter
	conn.address, conn.watch.address = opts.HostPort, opts.HostPort
	if conn.dataConverter == nil {
		conn.dataConverter = converter.GetDefaultDataConverter()
	}
	return conn, nil
}

// devServer is the dev server a command of cfg talks to: none when
// TEMPORAL_ADDRESS (or a profile) names a server and --dev is not given;
// else the one running on the state directory; with --dev and none
// running, one started now.
func (cctx *commandContext) devServer(cfg config.Config) (*devserver.Record, error) {
	if !cfg.Dev.Enabled {
		if addr, err := app.ConfiguredAddress(); err != nil || addr != "" {
			return nil, err
		}
		rec, ok, err := app.FindDevServer(cctx, cfg.Dev.StateDir)
		if err != nil || !ok {
			return nil, err
		}
		return &rec, nil
	}
	serve, err := devServeLine(cfg)
	if err != nil {
		return nil, err
	}
	rec, started, err := app.EnsureDevServer(cctx, cfg, serve)
	if err != nil {
		return nil, err
	}
	if started {
		fmt.Fprintf(cctx.stderr, "Started the Temporal dev server on %s (PID %d, state in %s): it runs on after this command; `%s` stops it\n",
			rec.Address, rec.PID, rec.StateDir, commandLine("dev stop"))
	}
	return &rec, nil
}

// devServeLine is the command line that serves cfg's dev server: this
// program's dev serve.
func devServeLine(cfg config.Config) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program to start the dev server with: %w", err)
	}
	return append([]string{exe, "dev", "serve"}, app.DevServeArgs(cfg)...), nil
}

// logToFile sends the log of this process's client and workers to
// starter.log in the state directory.
func (cctx *commandContext) logToFile(conn *connection, opts *client.Options) error {
	path := conn.logPath()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open the starter's log: %w", err)
	}
	conn.onClose(func() { f.Close() })
	opts.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})))
	return nil
}

// logPath is the starter's log in the dev server's state directory.
func (c *connection) logPath() string { return filepath.Join(c.dev.StateDir, "starter.log") }

// dial loads the configuration of cmd's flags and connects. On a dev
// server with no worker, it runs a worker of workflow code only in this
// process: queries and updates need a worker, and no agent may start
// here. conn.close undoes it all.
func (cctx *commandContext) dial(cmd *cobra.Command) (*connection, error) {
	cfg, err := config.Load(cmd.Flags(), "")
	if err != nil {
		return nil, err
	}
	conn, err := cctx.connect(cfg)
	if err != nil || conn.dev == nil {
		return conn, err
	}
	if has, err := app.HasWorker(cctx, conn.client, cfg.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW, false); err == nil && has {
		return conn, nil
	}
	w := app.NewWorkflowWorker(conn.client, cfg.TaskQueue)
	if err := w.Start(); err != nil {
		conn.close()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	conn.onClose(w.Stop)
	return conn, nil
}

// connectToRun connects for the commands that start workflows (run, plan,
// queue), after printing cfg's notices. On a dev server that no standing
// worker (worker, not a starter) serves for this host, this process is
// the worker too (with agents and GitHub activities), for as long as the
// command runs (conn.started).
func (cctx *commandContext) connectToRun(cfg config.Config) (*connection, error) {
	for _, n := range cfg.Notices() {
		fmt.Fprintln(cctx.stderr, n)
	}
	conn, err := cctx.connect(cfg)
	if err != nil || conn.dev == nil {
		return conn, err
	}
	q := contract.HostTaskQueue(cfg.TaskQueue, cfg.Worker.HostID)
	if has, err := app.HasWorker(cctx, conn.client, q, enumspb.TASK_QUEUE_TYPE_ACTIVITY, true); err == nil && has {
		return conn, nil
	}
	// As the worker, this process holds its secrets: guard them as the
	// worker does (selfguard).
	if err := selfguard.Protect(); err != nil {
		conn.close()
		return nil, err
	}
	gh, err := app.NewGitHub(cfg)
	if err != nil {
		conn.close()
		return nil, err
	}
	wopts := app.WorkerOptionsOf(cfg)
	wopts.Identity = app.StarterWorkerIdentity()
	if wopts.Chat, err = app.NewChat(cctx, cfg, conn.client, cctx.stderr); err != nil {
		conn.close()
		return nil, err
	}
	w := app.NewWorker(conn.client, wopts, app.NewAgent(cfg), gh)
	if err := w.Start(); err != nil {
		conn.close()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	conn.onClose(w.Stop)
	conn.started = true
	if err := app.StartChatInbox(cctx, conn.client, cfg.TaskQueue, wopts.Chat); err != nil {
		conn.close()
		return nil, err
	}
	fmt.Fprintf(cctx.stderr, "No worker runs for this host: this process is the worker until the session ends (log in %s)\n", conn.logPath())
	if cfg.GitHub.WebhookListen != "" || cfg.Worker.MetricsAddr != "" {
		fmt.Fprintln(cctx.stderr, "github.webhook-listen and worker.metrics-addr are served by a worker of its own (worker --dev …), not by this process: polling stands in for webhooks")
	}
	// What becomes of the agents is said once the session is known
	// (app.SessionSandboxNotice): its agent.sandbox, not the default.
	return conn, nil
}

// serverOf is the address and namespace cfg points at: the dev server's
// when one runs on the state directory and no TEMPORAL_ADDRESS (or
// profile) names another, or --dev is given; else "" for the temporal
// CLI's settings. It starts no server.
func serverOf(cfg config.Config) (hostPort, namespace string) {
	if !cfg.Dev.Enabled {
		if addr, err := app.ConfiguredAddress(); err != nil || addr != "" {
			return "", ""
		}
	}
	rec, st, err := devserver.Find(cfg.Dev.StateDir)
	if err == nil && st == devserver.Running {
		return rec.Address, rec.Namespace
	}
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
// the dev server outlives the command, so the link stays good.
func (c *connection) lastingURL(id string) string { return c.workflowURL(id) }

// suggest is a command line to print: this program, the subcommand, then
// args, in a form that reaches the same server from any terminal. A dev
// server is found by its state directory, so --dev is not needed, except
// where this terminal names another server (TEMPORAL_ADDRESS) and for run,
// which starts the dev server when it is gone; --state-dir is given when
// the state directory is not the default one.
func (c *connection) suggest(sub string, args ...string) string {
	if c == nil || c.dev == nil {
		return commandLine(sub, args...)
	}
	var flags []string
	if addr, err := app.ConfiguredAddress(); sub == "run" || err != nil || addr != "" {
		flags = append(flags, "--dev")
	}
	if def, err := config.DefaultStateDir(); err != nil || (filepath.Clean(def) != filepath.Clean(c.dev.StateDir) && !sameDir(def, c.dev.StateDir)) {
		flags = append(flags, "--state-dir", shellQuote(c.dev.StateDir))
	}
	return commandLine(sub, append(flags, args...)...)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '~' || r == '+' || r == ',' || r == ':' || r == '@' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
