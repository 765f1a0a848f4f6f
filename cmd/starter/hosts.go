package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/contract"
)

// orLegacy is id, the ID of a workflow on this host, unless no workflow
// has it and legacy, the ID the same workflow had before hosts were part
// of IDs, names one: sessions and queues started before that keep their
// IDs. With runningOnly, only a running legacy workflow counts, so that a
// new one starts with the new ID.
func orLegacy(ctx context.Context, c client.Client, id, legacy string, runningOnly bool) string {
	if id == legacy {
		return id
	}
	if !runningOnly {
		if _, err := c.DescribeWorkflowExecution(ctx, id, ""); err == nil {
			return id
		}
	}
	desc, err := c.DescribeWorkflowExecution(ctx, legacy, "")
	if err != nil {
		return id
	}
	if runningOnly && desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return id
	}
	return legacy
}

// sessionOf is the ID of the session of the workspace abs on host.
func sessionOf(ctx context.Context, c client.Client, host, abs string, runningOnly bool) string {
	return orLegacy(ctx, c, contract.SessionWorkflowID(host, abs), contract.LegacySessionWorkflowID(abs), runningOnly)
}

// sessionID resolves a command argument to a workflow ID: an existing
// directory names the session of its workspace on host, anything else is
// an ID.
func sessionID(ctx context.Context, c client.Client, host string, args []string) string {
	target := orDot(args)
	if fi, err := os.Stat(target); err == nil && fi.IsDir() {
		abs, err := filepath.Abs(target)
		if err == nil {
			if resolved, err := filepath.EvalSymlinks(abs); err == nil {
				abs = resolved
			}
			return sessionOf(ctx, c, host, abs, false)
		}
	}
	return target
}

// warnNoHostWorker says so when no worker polls host's task queue: the
// session would wait, shown host_offline, until one does.
func warnNoHostWorker(ctx context.Context, c client.Client, taskQueue, host string, stderr io.Writer) {
	if host == "" {
		return
	}
	q := contract.HostTaskQueue(taskQueue, host)
	if seen, err := workerSeen(ctx, c, taskQueue, host); err != nil || seen {
		return
	}
	fmt.Fprintf(stderr, "warning: no worker of host %s polls the task queue %s: the session waits (host_offline) until one runs there.\n"+
		"Start it on the machine that holds the workspace with: worker --host-id %s   (or give run the --host-id of the machine that does)\n", host, q, host)
}
