package main

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
)

// workerSeen reports whether a worker that is still alive polled the
// activity tasks of host's task queue (the shared taskQueue for a
// session from before hosts, "") lately: whether anything runs the host's
// sessions. What counts as lately, and as alive, is app.HasWorker's.
func workerSeen(ctx context.Context, c client.Client, taskQueue, host string) (bool, error) {
	q := taskQueue
	if host != "" {
		q = contract.HostTaskQueue(taskQueue, host)
	}
	return app.HasWorker(ctx, c, q, enumspb.TASK_QUEUE_TYPE_ACTIVITY, false)
}

// livenessDoc says of a running session whether a worker of its host
// polled lately (-o json's worker_seen), and when none did, what to do
// (liveness_note). Both are left out for a workflow that has ended, a
// queue, and when the server could not tell.
type livenessDoc struct {
	WorkerSeen   *bool  `json:"worker_seen,omitempty"`
	LivenessNote string `json:"liveness_note,omitempty"`
}

// liveness is the livenessDoc of a running session on host; seen caches
// what workerSeen said of each host, for a list of many sessions.
func liveness(ctx context.Context, conn *connection, host string, seen map[string]*bool) livenessDoc {
	s, ok := seen[host]
	if !ok {
		if ws, err := workerSeen(ctx, conn.client, conn.cfg.TaskQueue, host); err == nil {
			s = &ws
		}
		seen[host] = s
	}
	if s == nil {
		return livenessDoc{}
	}
	d := livenessDoc{WorkerSeen: s}
	if !*s {
		d.LivenessNote = noWorkerNote(conn, host)
	}
	return d
}

// noWorkerNote says that no worker runs for host, and how to start one.
func noWorkerNote(conn *connection, host string) string {
	cmd := "worker"
	if conn.cfg.Dev.Enabled || conn.dev != nil {
		cmd += " --dev"
	}
	if host == "" {
		return fmt.Sprintf("no worker is running for task queue %s: start one with `%s`", conn.cfg.TaskQueue, cmd)
	}
	if host != conn.cfg.Worker.HostID {
		cmd += " --host-id " + host
	}
	return fmt.Sprintf("no worker is running for host %s: start one with `%s`", host, cmd)
}
