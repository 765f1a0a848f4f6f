package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/internal/devserver"
)

// DevReadyTimeout is how long a command waits for a dev server that is
// starting to answer.
const DevReadyTimeout = 2 * time.Minute

// ConfiguredAddress is the Temporal address the temporal CLI's settings
// name (TEMPORAL_ADDRESS, a profile, the config file), or "" when they name
// none. One that is set wins over the dev server of the state directory.
func ConfiguredAddress() (string, error) {
	opts, err := envconfig.LoadDefaultClientOptions()
	if err != nil {
		return "", fmt.Errorf("load Temporal client settings: %w", err)
	}
	return opts.HostPort, nil
}

// ServeDev runs the dev server cfg configures in this process until ctx
// ends (or its state directory is removed), then stops it: the body of the hidden commands (starter dev serve,
// worker dev-server) that EnsureDevServer starts in the background. It
// writes what it does to log.
func ServeDev(ctx context.Context, cfg config.Config, log io.Writer) error {
	srv, err := StartDevServer(ctx, cfg.Dev, cfg.Codec.Server)
	if err != nil {
		return err
	}
	rec := srv.Record()
	fmt.Fprintf(log, "%s dev server PID %d serves %s (namespace %s, UI %s, state in %s)\n",
		time.Now().Format(time.DateTime), rec.PID, rec.Address, rec.Namespace, orNone(rec.UIURL), rec.StateDir)
	waitWhileStateDir(ctx, rec.StateDir)
	fmt.Fprintf(log, "%s dev server PID %d stops\n", time.Now().Format(time.DateTime), rec.PID)
	srv.Stop()
	fmt.Fprintf(log, "%s dev server PID %d stopped\n", time.Now().Format(time.DateTime), rec.PID)
	return nil
}

// waitWhileStateDir returns when ctx ends or the lock file of stateDir is
// gone: a server whose state directory was removed serves nobody.
func waitWhileStateDir(ctx context.Context, stateDir string) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := os.Stat(filepath.Join(stateDir, devserver.LockFile)); errors.Is(err, os.ErrNotExist) {
				return
			}
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "off"
	}
	return s
}

// DevServeArgs are the flags of the serve command (after its name) that
// make it serve what cfg configures, whatever the environment of the
// process that runs it.
func DevServeArgs(cfg config.Config) []string {
	args := []string{
		"--state-dir", cfg.Dev.StateDir,
		"--dev-ip", cfg.Dev.IP,
		"--dev-port", strconv.Itoa(cfg.Dev.Port),
		"--dev-ui-port", strconv.Itoa(cfg.Dev.UIPort),
		"--namespace", cfg.Dev.Namespace,
	}
	if cfg.Codec.Server != "" {
		args = append(args, "--codec-server", cfg.Codec.Server)
	}
	return args
}

// FindDevServer is the dev server running on stateDir, waiting for one
// that is starting to answer; ok is false when none runs.
func FindDevServer(ctx context.Context, stateDir string) (rec devserver.Record, ok bool, err error) {
	if stateDir == "" {
		return devserver.Record{}, false, nil
	}
	rec, st, err := devserver.Find(stateDir)
	if err != nil || st == devserver.NotRunning {
		return devserver.Record{}, false, err
	}
	if st == devserver.Running {
		return rec, true, nil
	}
	return waitDevServer(ctx, stateDir, nil)
}

// waitDevServer waits for the server starting on stateDir to answer. A
// non-nil exited delivers when the process that was to become the server
// exits.
func waitDevServer(ctx context.Context, stateDir string, exited <-chan error) (devserver.Record, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, DevReadyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		rec, st, err := devserver.Find(stateDir)
		if err != nil {
			return devserver.Record{}, false, err
		}
		switch st {
		case devserver.Running:
			return rec, true, nil
		case devserver.NotRunning:
			if exited == nil {
				return devserver.Record{}, false, nil
			}
		}
		select {
		case err := <-exited:
			// Another process may have won the state directory: its
			// server is as good as ours.
			if rec, st, ferr := devserver.Find(stateDir); ferr == nil && st != devserver.NotRunning {
				if st == devserver.Running {
					return rec, true, nil
				}
				return waitDevServer(ctx, stateDir, nil)
			}
			return devserver.Record{}, false, fmt.Errorf("the Temporal dev server did not start (%v); its log %s ends:\n%s",
				err, filepath.Join(stateDir, devserver.LogFile), logTail(filepath.Join(stateDir, devserver.LogFile), 15))
		case <-ctx.Done():
			return devserver.Record{}, false, fmt.Errorf("wait for the Temporal dev server on %s: %w", stateDir, ctx.Err())
		case <-tick.C:
		}
	}
}

// EnsureDevServer finds the dev server of cfg's state directory or, when
// none runs, starts one in the background with the command line serve
// (this program's hidden serve command, given DevServeArgs): a process in
// a session of its own, its output in the state directory's log, that
// outlives the command that started it. started says it did.
func EnsureDevServer(ctx context.Context, cfg config.Config, serve []string) (rec devserver.Record, started bool, err error) {
	dir := cfg.Dev.StateDir
	if dir == "" {
		return devserver.Record{}, false, errors.New("dev.state-dir is not set and has no default: set --state-dir or RALPH_DEV_STATE_DIR")
	}
	if rec, ok, err := FindDevServer(ctx, dir); err != nil || ok {
		return rec, false, err
	}
	addr := fmt.Sprintf("%s:%d", cfg.Dev.IP, cfg.Dev.Port)
	if Reachable(addr) {
		// One that another command started a moment ago is ours.
		if rec, ok, err := FindDevServer(ctx, dir); err != nil || ok {
			return rec, false, err
		}
		return devserver.Record{}, false, fmt.Errorf("a server answers on %s, but it is not the dev server of %s (it holds no lock there): "+
			"Durable Ralph does not attach to it. Stop it, give the dev server another port (--dev-port, RALPH_DEV_PORT), "+
			"or point TEMPORAL_ADDRESS at it and drop --dev", addr, dir)
	}
	rec, started, err = startDevServer(ctx, dir, serve)
	if err != nil && strings.Contains(err.Error(), "address already in use") {
		// A port the server picked at random was taken between its check
		// and its bind by another process: new ones, once.
		rec, started, err = startDevServer(ctx, dir, serve)
	}
	return rec, started, err
}

// startDevServer starts the dev server of dir with the command line serve
// and waits until it runs.
func startDevServer(ctx context.Context, dir string, serve []string) (devserver.Record, bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return devserver.Record{}, false, fmt.Errorf("create state dir: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, devserver.LogFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return devserver.Record{}, false, fmt.Errorf("open the dev server's log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(serve[0], serve[1:]...)
	// Stdin is /dev/null; the log is the output; its own session keeps
	// the terminal's signals (Ctrl-C, hangup) away from it.
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return devserver.Record{}, false, fmt.Errorf("start the Temporal dev server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	rec, ok, err := waitDevServer(ctx, dir, exited)
	if err != nil {
		return devserver.Record{}, false, err
	}
	if !ok {
		return devserver.Record{}, false, fmt.Errorf("the Temporal dev server on %s did not start", dir)
	}
	return rec, rec.PID == cmd.Process.Pid, nil
}

// StopDevServer stops the dev server of stateDir gracefully (SIGTERM) and
// waits up to timeout for it to let go of the state directory, then kills
// it. It returns the record of the server it stopped; ok is false when
// none ran.
func StopDevServer(ctx context.Context, stateDir string, timeout time.Duration) (rec devserver.Record, ok bool, err error) {
	rec, st, err := devserver.Find(stateDir)
	if err != nil || st == devserver.NotRunning {
		return rec, false, err
	}
	if rec.PID <= 0 {
		return rec, false, fmt.Errorf("the dev server on %s has not recorded its PID yet: try again", stateDir)
	}
	if rec.PID == os.Getpid() {
		return rec, false, fmt.Errorf("the dev server on %s runs in this process", stateDir)
	}
	if err := syscall.Kill(rec.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return rec, false, fmt.Errorf("stop the dev server (PID %d): %w", rec.PID, err)
	}
	gone := func() bool {
		_, st, err := devserver.Find(stateDir)
		return err == nil && st == devserver.NotRunning
	}
	deadline := time.Now().Add(timeout)
	for !gone() {
		if time.Now().After(deadline) {
			_ = syscall.Kill(rec.PID, syscall.SIGKILL)
			for range 50 {
				if gone() {
					return rec, true, fmt.Errorf("the dev server (PID %d) did not stop within %s: killed", rec.PID, timeout)
				}
				time.Sleep(100 * time.Millisecond)
			}
			return rec, true, fmt.Errorf("the dev server (PID %d) does not stop", rec.PID)
		}
		select {
		case <-ctx.Done():
			return rec, true, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return rec, true, nil
}

// logTail is the last n lines of the file path.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	// A Go stack trace says less than the lines before it: leave out its
	// frames (a function, then its file and line after a tab).
	var lines [][]byte
	for _, l := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
		if bytes.HasPrefix(l, []byte("\t")) || stackFrame.Match(l) {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// stackFrame matches the function line of a Go stack frame, such as
// github.com/spf13/cobra.(*Command).execute or main.main.
var stackFrame = regexp.MustCompile(`^[\w.\-/]+\.(\(\*?\w+\)\.)?[\w.]+(\(.*\))?$`)

// starterIdentitySuffix ends the identity of a worker that a starter runs
// for as long as it follows its own session.
const starterIdentitySuffix = "@starter"

// StarterWorkerIdentity is the worker identity of a starter process that
// runs a worker: it tells the worker of one command from a standing one.
func StarterWorkerIdentity() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%d@%s%s", os.Getpid(), host, starterIdentitySuffix)
}

// pollerFresh is how long a poller counts as alive after its last poll:
// a live one polls again at least every long poll (about a minute).
const pollerFresh = 90 * time.Second

// HasWorker reports whether a worker that is still alive polled the task
// queue q (of type typ) recently. With standingOnly, the workers that
// starters run for the life of one command do not count.
func HasWorker(ctx context.Context, c client.Client, q string, typ enumspb.TaskQueueType, standingOnly bool) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := c.DescribeTaskQueue(ctx, q, typ)
	if err != nil {
		return false, fmt.Errorf("describe task queue %s: %w", q, err)
	}
	for _, p := range resp.GetPollers() {
		if standingOnly && strings.HasSuffix(p.GetIdentity(), starterIdentitySuffix) {
			continue
		}
		if time.Since(p.GetLastAccessTime().AsTime()) < pollerFresh && !deadHere(p.GetIdentity()) {
			return true, nil
		}
	}
	return false, nil
}

// deadHere reports whether the worker identity (PID@host@..., as the SDK
// and StarterWorkerIdentity make them) names a process of this machine
// that is gone: the server keeps a dead worker's polls for minutes.
func deadHere(identity string) bool {
	parts := strings.SplitN(identity, "@", 3)
	if len(parts) < 2 {
		return false
	}
	pid, err := strconv.Atoi(parts[0])
	host, _ := os.Hostname()
	if err != nil || pid <= 0 || parts[1] != host {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
