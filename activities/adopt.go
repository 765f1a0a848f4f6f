package activities

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/tasks"
)

// adopted is the run of a dead attempt whose agent had finished: the
// attempt's saved stream holds the agent's whole output, ending in the
// event that says it finished (a worker frozen or killed while the agent
// wrote its result). The retry records that run — its cost, tokens and
// commit, once — instead of running the agent again, which would go on
// to the next story and fold it into this iteration's commit. ok is
// false when there is no such stream: the retry runs the agent as before.
func (a *Agent) adopted(it *iteration) (run agentRun, ok bool) {
	prev := it.prev
	if !it.interrupted || prev == nil || prev.Log == "" || it.in.RoleOf() != contract.RoleExecutor {
		return agentRun{}, false
	}
	if f, isFinisher := it.backend.(agent.Finisher); !isFinisher || !f.StreamSaysFinished() {
		return agentRun{}, false
	}
	data, err := tasks.ReadFile(it.in.Workspace, prev.Log)
	if err != nil {
		return agentRun{}, false
	}
	parser := it.backend.NewParser(backendOptions(it.in.Agent))
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), a.maxLine())
	for sc.Scan() {
		_, _ = parser.Line(sc.Bytes())
	}
	if sc.Err() != nil {
		return agentRun{}, false
	}
	v := parser.Verdict(nil, "", time.Now())
	if v.Outcome != contract.OutcomeSuccess {
		return agentRun{}, false
	}
	it.warnings = append(it.warnings, fmt.Sprintf(
		"attempt %d's agent had finished when its worker stopped (%s ends in its result): its run was recorded, not run again",
		max(prev.Attempt, 1), prev.Log))
	return agentRun{summary: parser.Summary(), verdict: v, started: prev.StartedAt}, true
}

// sessionLocks holds one lock per session (execution key): a retry
// waits for an earlier attempt of the same iteration that still runs in
// this process (its worker was frozen, its heartbeat timed out, and it
// has not yet seen its cancellation) before touching the workspace.
var sessionLocks sync.Map // key → chan struct{}

// lockSession takes key's lock, or gives up when ctx ends.
func lockSession(ctx context.Context, key string) (unlock func(), err error) {
	v, _ := sessionLocks.LoadOrStore(key, make(chan struct{}, 1))
	ch := v.(chan struct{})
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the earlier attempt of this iteration to end: %w", ctx.Err())
	}
}
