package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/attempts"
	"github.com/durable-ralph/ralph/process"
)

// AttemptsDir is where the workers of host record their running
// attempts, under the state directory.
func AttemptsDir(stateDir, host string) string {
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, host)
	if name == "" || name == "." || name == ".." {
		name = "_"
	}
	return filepath.Join(stateDir, "attempts", name)
}

// RecordsDir is where the workers of a state directory keep what they
// read back of their iterations (activities.Agent.Records): a directory
// no contained agent sees, shared by the workers of the machine, so that
// a worker started after another died finds its records.
func RecordsDir(stateDir string) string {
	return filepath.Join(stateDir, "records")
}

// attemptsIn is the record of attempts kept in dir; nil for "".
func attemptsIn(dir string) *attempts.Dir {
	if dir == "" {
		return nil
	}
	return &attempts.Dir{Path: dir}
}

// failOrphans fails, by task token, the iteration attempts a worker of
// this host left when it died: their retries are scheduled now instead of
// after the heartbeat timeout, and resume the agent's session as any
// retry does (the last heartbeat's details stay with the activity). An
// agent still running from such an attempt is killed first, and so is
// every process of a run whose worker is gone (process.EndOrphans). What
// the server no longer knows (the attempt timed out meanwhile) is
// dropped.
func (w *Worker) failOrphans(ctx context.Context) {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// What a dead worker's agent runs left running (a sandbox it was
	// killed starting, whose bubblewrap outlived it) ends first.
	if n := process.EndOrphans(); n > 0 {
		log.Info("ended the processes of agent runs whose worker is gone", "processes", n)
	}
	if w.attempts == nil {
		return
	}
	orphans, err := w.attempts.Orphans()
	if err != nil {
		log.Warn("attempts of an earlier worker not read", "error", err)
		return
	}
	for _, o := range orphans {
		if o.KillAgent() {
			log.Info("killed the agent an earlier worker left", "workflow", o.WorkflowID, "pid", o.AgentPID)
		}
		// NextRetryDelay: the retry policy's first interval (1 s) is for
		// a failure that may fix itself; this one is fixed (the new worker
		// is up), so the retry is scheduled at once. The server reads a
		// zero delay as none given, hence a millisecond.
		cause := temporal.NewApplicationErrorWithOptions(
			fmt.Sprintf("worker restarted: the worker (PID %d) running attempt %d of this iteration died; retried at once", o.WorkerPID, o.Attempt),
			contract.ErrTypeWorkerRestarted, temporal.ApplicationErrorOptions{NextRetryDelay: time.Millisecond})
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := w.c.CompleteActivity(rctx, o.TaskToken, nil, cause)
		cancel()
		var notFound *serviceerror.NotFound
		switch {
		case err == nil:
			fmt.Fprintf(os.Stderr, "Retrying at once the iteration a worker before this one was running (%s, attempt %d)\n", o.WorkflowID, o.Attempt)
		case errors.As(err, &notFound):
			// Already timed out, completed or retried: nothing to do.
		default:
			log.Warn("could not fail the attempt an earlier worker left; it is retried after its heartbeat timeout",
				"workflow", o.WorkflowID, "error", err)
		}
		o.Remove()
	}
}

// ClonesDir is where a worker clones the repositories that have no clone
// of the user's: $XDG_DATA_HOME/durable-ralph/clones, by default
// ~/.local/share/durable-ralph/clones; "" without a home. Not in the
// state directory, which agents never see: agents work in these clones.
func ClonesDir(getenv func(string) string) string {
	data := getenv("XDG_DATA_HOME")
	if data == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		data = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(data, "durable-ralph", "clones")
}
