package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/internal/devserver"
)

// newDevCmd is `starter dev`: the commands that start, stop and look at
// the Temporal dev server of the state directory.
func newDevCmd(cctx *commandContext) *cobra.Command {
	dev := &cobra.Command{
		Use:   "dev",
		Short: "Start, stop and look at the Temporal dev server of the state directory",
		Long: `dev manages the Temporal dev server (with the Web UI, its state in SQLite) of the state
directory (--state-dir, default $XDG_STATE_HOME/durable-ralph or ~/.local/state/durable-ralph).
One server runs per state directory, in the background, in a process of its own: any command
given --dev starts it when it is not running, and every command finds it (unless
TEMPORAL_ADDRESS names another server), whatever port it runs on. It records its PID and
addresses in devserver.json and logs to temporal.log, both in the state directory.`,
		Args: cobra.NoArgs,
	}
	for _, s := range devCommands() {
		dev.AddCommand(s.build(cctx))
	}
	serve := spec{
		use:    "serve",
		short:  "Run the dev server in the foreground (what dev start runs in the background)",
		args:   cobra.NoArgs,
		groups: dialFlags | config.WorkerFlags,
		cmd:    &devServeCommand{},
	}.build(cctx)
	serve.Hidden = true
	dev.AddCommand(serve)
	return dev
}

// devCommands are the commands of starter dev.
func devCommands() []spec {
	return []spec{{
		use:   "start",
		short: "Start the dev server of the state directory in the background, unless it runs",
		long: `start starts the Temporal dev server of the state directory in the background, on --dev-ip,
--dev-port and --dev-ui-port, unless one runs there already; either way it prints the server's
status. The server runs until dev stop (or the machine stops), whichever command started it.`,
		args:   cobra.NoArgs,
		groups: dialFlags,
		cmd:    &devStartCommand{},
	}, {
		use:   "status",
		short: "Show the dev server of the state directory: address, UI, PID, uptime, log",
		long: `status shows whether the Temporal dev server of the state directory runs, and its address,
Web UI, PID, uptime, state directory and log. It exits 3 when no server runs there.`,
		args:   cobra.NoArgs,
		groups: dialFlags,
		cmd:    &devStatusCommand{},
	}, {
		use:   "stop",
		short: "Stop the dev server of the state directory and wait until it has stopped",
		long: `stop stops the Temporal dev server of the state directory gracefully (SIGTERM) and waits for
it to end, at most --timeout; then it kills it. Sessions lose nothing: they wait, and go on
when a server runs on the state directory again. Followers and workers say they lost the
server and wait for it.`,
		args:   cobra.NoArgs,
		groups: dialFlags,
		cmd:    &devStopCommand{},
	}, {
		use:    "logs",
		short:  "Print the log of the dev server of the state directory (-f to follow it)",
		args:   cobra.NoArgs,
		groups: dialFlags,
		cmd:    &devLogsCommand{},
	}}
}

// devStartCommand is `starter dev start`.
type devStartCommand struct{ base }

func (s *devStartCommand) run(cctx *commandContext, _ []string) error {
	cfg, err := config.Load(s.cmd.Flags(), "")
	if err != nil {
		return err
	}
	serve, err := devServeLine(cfg)
	if err != nil {
		return err
	}
	rec, started, err := app.EnsureDevServer(cctx, cfg, serve)
	if err != nil {
		return err
	}
	if started {
		fmt.Fprintln(cctx.stdout, "Started the Temporal dev server.")
	} else {
		fmt.Fprintln(cctx.stdout, "The Temporal dev server already runs.")
	}
	printDevServer(cctx.stdout, rec)
	return nil
}

// devStatusCommand is `starter dev status`.
type devStatusCommand struct{ base }

func (s *devStatusCommand) run(cctx *commandContext, _ []string) error {
	cfg, err := config.Load(s.cmd.Flags(), "")
	if err != nil {
		return err
	}
	dir := cfg.Dev.StateDir
	rec, st, err := devserver.Find(dir)
	if err != nil {
		return err
	}
	switch st {
	case devserver.Running:
		fmt.Fprintln(cctx.stdout, "The Temporal dev server runs.")
		printDevServer(cctx.stdout, rec)
		return nil
	case devserver.Starting:
		fmt.Fprintf(cctx.stdout, "The Temporal dev server of %s is starting (PID %d); its log is %s\n", dir, rec.PID, filepath.Join(dir, devserver.LogFile))
		return nil
	}
	fmt.Fprintf(cctx.stdout, "No Temporal dev server runs on %s: `%s` (or any command with --dev) starts one.\n", dir, commandLine("dev start"))
	return &exitError{code: 3}
}

// printDevServer prints what rec says of a running dev server.
func printDevServer(out io.Writer, rec devserver.Record) {
	row := func(k, format string, args ...any) {
		fmt.Fprintf(out, "  %-12s "+format+"\n", append([]any{k + ":"}, args...)...)
	}
	row("Address", "%s (namespace %s)", rec.Address, rec.Namespace)
	if rec.UIURL != "" {
		row("Temporal UI", "%s/namespaces/%s/workflows", rec.UIURL, rec.Namespace)
	} else {
		row("Temporal UI", "off")
	}
	row("PID", "%d", rec.PID)
	row("Up", "%s (since %s)", time.Since(rec.Started).Round(time.Second), rec.Started.Local().Format(time.DateTime))
	row("State dir", "%s", rec.StateDir)
	row("Log", "%s", rec.Log())
}

// devStopCommand is `starter dev stop`.
type devStopCommand struct {
	base
	timeout time.Duration
}

func (s *devStopCommand) flags(f *pflag.FlagSet) {
	f.DurationVar(&s.timeout, "timeout", time.Minute, "how long to wait for the server to stop before killing it")
}

func (s *devStopCommand) run(cctx *commandContext, _ []string) error {
	cfg, err := config.Load(s.cmd.Flags(), "")
	if err != nil {
		return err
	}
	rec, ok, err := app.StopDevServer(cctx, cfg.Dev.StateDir, s.timeout)
	if !ok && err == nil {
		fmt.Fprintf(cctx.stdout, "No Temporal dev server runs on %s.\n", cfg.Dev.StateDir)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cctx.stdout, "Stopped the Temporal dev server (PID %d, %s) of %s.\n", rec.PID, rec.Address, cfg.Dev.StateDir)
	return nil
}

// devLogsCommand is `starter dev logs`.
type devLogsCommand struct {
	base
	follow bool
}

func (s *devLogsCommand) flags(f *pflag.FlagSet) {
	f.BoolVarP(&s.follow, "follow", "f", false, "print what the server logs as it logs it, until Ctrl-C")
}

func (s *devLogsCommand) run(cctx *commandContext, _ []string) error {
	cfg, err := config.Load(s.cmd.Flags(), "")
	if err != nil {
		return err
	}
	path := filepath.Join(cfg.Dev.StateDir, devserver.LogFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && !s.follow {
		return fmt.Errorf("no dev server log in %s: no dev server ran there", cfg.Dev.StateDir)
	}
	for errors.Is(err, os.ErrNotExist) {
		select {
		case <-cctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		f, err = os.Open(path)
	}
	if err != nil {
		return fmt.Errorf("open the dev server's log: %w", err)
	}
	defer f.Close()
	for {
		if _, err := io.Copy(cctx.stdout, f); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if !s.follow {
			return nil
		}
		select {
		case <-cctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// devServeCommand is the hidden `starter dev serve`: the dev server in
// this process, until SIGTERM or Ctrl-C. dev start and --dev run it in
// the background.
type devServeCommand struct{ base }

func (s *devServeCommand) run(cctx *commandContext, _ []string) error {
	cfg, err := config.Load(s.cmd.Flags(), "")
	if err != nil {
		return err
	}
	return app.ServeDev(cctx, cfg, cctx.stderr)
}
