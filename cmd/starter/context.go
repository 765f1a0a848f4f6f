package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/durable-ralph/ralph/config"
)

// commandContext is what every command of one starter process shares:
// the context it runs in (cancelled by the first Ctrl-C), where it
// writes, and the root's --verbose. The commands get it in their run
// method, the way the temporal CLI's generated commands get its
// CommandContext; tests give it buffers.
type commandContext struct {
	context.Context
	stdout, stderr io.Writer
	// verbose is --verbose: failures are printed with their whole chain
	// of activity and workflow errors.
	verbose bool
	// handover says once that a query waits for a worker to take a
	// workflow over (waitingForWorker).
	handover sync.Once
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

// exitCode is the exit status for err, which it prints (explained).
func (cctx *commandContext) exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := errors.AsType[*exitError](err); ok {
		if ee.err != nil {
			fmt.Fprintln(cctx.stderr, "starter:", cctx.explain(ee.err))
		}
		return ee.code
	}
	if errors.Is(err, context.Canceled) {
		return 130
	}
	fmt.Fprintln(cctx.stderr, "starter:", cctx.explain(err))
	return 1
}

// queueFlag is --queue DIR (with --repo) of the commands that act on a
// session or on the issue queue of a clone.
type queueFlag struct {
	dir string
}

// targeted is what the commands that act on a session or on the issue
// queue of a clone (--queue DIR) embed.
type targeted struct {
	base
	queue queueFlag
}

// flags adds --queue DIR, and --repo for a clone whose origin does not
// name its GitHub repository.
func (t *targeted) flags(f *pflag.FlagSet) {
	f.StringVar(&t.queue.dir, "queue", "", "act on the issue queue of the clone in this directory")
	f.String("repo", "", "with --queue: the queue's GitHub repository as owner/name (default: from the clone's origin URL) ($RALPH_GITHUB_REPO)")
	// It is the setting github.repo, which help shows with its topic.
	_ = f.SetAnnotation("repo", config.TopicAnnotation, []string{config.TopicQueue})
}

// target is the workflow a command acts on: the queue of --queue DIR, or
// the session (or queue) named by args.
func (q queueFlag) target(cctx *commandContext, cmd *cobra.Command, conn *connection, args []string) (string, error) {
	if q.dir == "" {
		return sessionID(cctx, conn.client, conn.cfg.Worker.HostID, args), nil
	}
	if len(args) > 0 {
		return "", errors.New("give either --queue DIR or a session, not both")
	}
	return queueTarget(cctx, cmd, conn.client, q.dir)
}

// withTarget dials and calls fn with the workflow that --queue DIR
// (q) or args name.
func (cctx *commandContext) withTarget(cmd *cobra.Command, q queueFlag, args []string, fn func(conn *connection, id string) error) error {
	conn, err := cctx.dial(cmd)
	if err != nil {
		return err
	}
	defer conn.close()
	id, err := q.target(cctx, cmd, conn, args)
	if err != nil {
		return err
	}
	return fn(conn, id)
}
