package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/durable-ralph/ralph/app"
)

// handoverWait is how long a query waits for its answer while the worker
// that ran the workflow last is gone: the server first offers the query
// to that worker's sticky queue (for the SDK's sticky schedule-to-start
// timeout, 5 s), then clears it and offers the query to the workflow's
// task queue, where another worker answers (or this process's own, see
// dial); a dev server that restarts with the worker that embedded it
// answers a moment later. About 8 s after a kill -9, in practice.
const handoverWait = 15 * time.Second

// handoverNotice is how long a query goes unanswered before the starter
// says that it waits for a worker to take over.
const handoverNotice = 2 * time.Second

// handoverRetry is the pause between two tries of a query that the
// server refused for want of a worker (or of itself, restarting).
const handoverRetry = 500 * time.Millisecond

// waitingNote is what a command says, once, while a query of it waits
// for a worker to take a workflow over.
const waitingNote = "waiting for a worker to take over"

// waitingForWorker says on stderr, once per command, that a query waits
// for a worker to take a workflow over.
func (cctx *commandContext) waitingForWorker() {
	cctx.handover.Do(func() { fmt.Fprintln(cctx.stderr, waitingNote) })
}

// ask asks the workflow id (its run, "" for the latest) the query name
// with args. A query that gets no answer because the worker that ran the
// workflow is gone (the server waits on its sticky queue) or because the
// server restarts is asked again until handoverWait has passed, or ctx's
// deadline; waiting, when not nil, is called once the answer is late
// (after handoverNotice, or at the first refusal), and has returned when
// ask does.
func ask(ctx context.Context, c client.Client, waiting func(), id, run, name string, args ...any) (converter.EncodedValue, error) {
	deadline := time.Now().Add(handoverWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	say := func() {}
	if waiting != nil {
		said := make(chan struct{})
		timer := time.AfterFunc(handoverNotice, func() { defer close(said); waiting() })
		defer func() {
			if !timer.Stop() {
				<-said
			}
		}()
		say = waiting
	}
	for {
		actx, cancel := context.WithDeadline(ctx, deadline)
		v, err := c.QueryWorkflow(actx, id, run, name, args...)
		cancel()
		if err == nil || ctx.Err() != nil || !handingOver(err) || time.Until(deadline) < handoverRetry {
			return v, err
		}
		say()
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(handoverRetry):
		}
	}
}

// handingOver reports whether err is how a query fails while no worker
// can answer it yet: the server gave up waiting (the dead worker's sticky
// queue), or could not be reached a moment (it restarts; a stream reset).
// What a worker answered (a failed or unknown query) and what the server
// knows for sure (no such workflow) are not.
func handingOver(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if _, ok := errors.AsType[*serviceerror.DeadlineExceeded](err); ok {
		return true
	}
	if _, ok := errors.AsType[*serviceerror.Unavailable](err); ok {
		return true
	}
	if _, ok := errors.AsType[*serviceerror.Canceled](err); ok {
		return true
	}
	if e, ok := errors.AsType[*serviceerror.Internal](err); ok {
		return strings.Contains(e.Error(), "RST_STREAM")
	}
	return false
}

// noAnswer is err, the error of a query of a running workflow, with why
// no answer came when no worker answered in time: a worker polls the
// workflows' task queue but did not answer (it is not blamed as missing),
// or none polls (note says so of the session's host when it is known).
// Another error is returned as it is.
func (cctx *commandContext) noAnswer(conn *connection, err error, note string) error {
	if !handingOver(err) {
		return err
	}
	q := conn.cfg.TaskQueue
	polls, perr := app.HasWorker(cctx, conn.client, q, enumspb.TASK_QUEUE_TYPE_WORKFLOW, false)
	switch {
	case perr == nil && polls:
		return fmt.Errorf("%w (a worker polls task queue %q but did not answer within %s: try again in a moment)", err, q, handoverWait)
	case note != "":
		return fmt.Errorf("%w (%s)", err, note)
	case perr == nil:
		return fmt.Errorf("%w (%s)", err, noWorkerNote(conn, ""))
	}
	return fmt.Errorf("%w (is a worker running for task queue %q?)", err, q)
}
