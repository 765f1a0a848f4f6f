package activities

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
)

// adopted is the run of a dead attempt whose agent had finished: the
// attempt's saved stream holds the agent's whole output, ending in the
// event that says it finished (a worker frozen or killed while the agent
// wrote its result). The retry records that run — its cost, tokens and
// commit, once — instead of running the agent again, which would go on
// to the next story and fold it into this iteration's commit. ok is
// false when there is no such stream: the retry runs the agent as before.
func (a *Agent) adopted(ctx context.Context, it *iteration) (run agentRun, ok bool, err error) {
	prev := it.prev
	if !it.interrupted || prev == nil || it.in.RoleOf() != contract.RoleExecutor {
		return agentRun{}, false, nil
	}
	if f, isFinisher := it.backend.(agent.Finisher); !isFinisher || !f.StreamSaysFinished() {
		return agentRun{}, false, nil
	}
	// The latest attempt's stream, which may be newer than the progress
	// the retry got: a worker frozen or killed before an attempt's first
	// heartbeat leaves its retry the attempt before's (or none). It is
	// the worker's record of the stream, which the agent cannot reach.
	name, attempt := a.records().lastStream(it.in.Key(), it.in.Iteration, it.attempt)
	if name == "" {
		return agentRun{}, false, nil
	}
	sum, v, ok := a.readStream(it, name)
	if !ok || v.Outcome != contract.OutcomeSuccess {
		return agentRun{}, false, nil
	}
	if attempt > prev.Attempt {
		// The adopted attempt never beat: it started where HEAD is (an
		// earlier attempt's work committed apart), on the story HEAD's
		// task file has next. The earlier attempt's cost still counts.
		now, err := it.progressAtHead(ctx, attempt)
		if err != nil {
			return agentRun{}, false, err
		}
		if now != nil {
			it.earlier, it.prev = prev, now
		}
	}
	it.warnings = append(it.warnings, fmt.Sprintf(
		"attempt %d's agent had finished when its worker stopped (its stream ends in its result): its run was recorded, not run again",
		attempt))
	return agentRun{summary: sum, verdict: v, started: prev.StartedAt}, true, nil
}

// readStream reads the saved stream at path as it's backend's parser
// reads a live one: the run's summary and verdict. ok is false when it
// cannot be read.
func (a *Agent) readStream(it *iteration, path string) (agent.Summary, agent.Verdict, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return agent.Summary{}, agent.Verdict{}, false
	}
	parser := it.backend.NewParser(backendOptions(it.in.Agent))
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), a.maxLine())
	for sc.Scan() {
		_, _ = parser.Line(sc.Bytes())
	}
	if sc.Err() != nil {
		return agent.Summary{}, agent.Verdict{}, false
	}
	return parser.Summary().Sane(), parser.Verdict(nil, "", time.Now()), true
}

// recoverUncounted counts what the last runs of the iterations in
// in.Uncounted cost beyond what the session counted of them: each such
// iteration failed after its retries, and its last run may have finished
// while its worker stood still (frozen, or stopped before it could say
// so), with no attempt left to record it. A run counts once its saved
// stream ends in the event that reports its cost (a backend whose stream
// says so, agent.Finisher); what the session counted of that attempt,
// from its last heartbeat, is taken off.
func (a *Agent) recoverUncounted(it *iteration) {
	f, isFinisher := it.backend.(agent.Finisher)
	if !isFinisher || !f.StreamSaysFinished() {
		return
	}
	for _, u := range it.in.Uncounted {
		path, attempt := a.records().lastStream(it.in.Key(), u.Iteration, math.MaxInt)
		if path == "" {
			continue
		}
		sum, v, ok := a.readStream(it, path)
		if !ok || v.Outcome != contract.OutcomeSuccess && !sum.CostKnown {
			continue // cut off before it reported what it cost
		}
		cost, usage := sum.CostUSD, sum.Usage
		if u.Attempt == attempt {
			cost, usage = max(cost-u.CostUSD, 0), usage.Less(u.Usage)
		}
		if cost == 0 && usage.Total() == 0 {
			continue
		}
		it.recovered.CostUSD += cost
		it.recovered.Usage = it.recovered.Usage.Add(usage)
		it.warnings = append(it.warnings, fmt.Sprintf(
			"iteration %d failed after its retries, but the agent of its attempt %d had finished: its cost ($%.4f, %d tokens) is counted here",
			u.Iteration, attempt, cost, usage.Total()))
	}
}

// carryEarlier puts in this attempt's progress what the dead attempts
// before it reported and nothing has counted, so that it outlives this
// attempt if it dies too: the earlier attempts' own, and the dead
// attempt's own unless a resumed run of a backend that reports its
// session's totals counts it.
func (it *iteration) carryEarlier() {
	prev := it.prev
	it.progress.EarlierCostUSD, it.progress.EarlierUsage = prev.EarlierCostUSD, prev.EarlierUsage
	if it.earlier != nil {
		it.progress.EarlierCostUSD += it.earlier.CostUSD + it.earlier.EarlierCostUSD
		it.progress.EarlierUsage = it.progress.EarlierUsage.Add(it.earlier.Usage).Add(it.earlier.EarlierUsage)
	}
	if !it.adopted && !(prev.AgentSessionID != "" && sessionTotals(it.backend)) {
		it.progress.EarlierCostUSD += prev.CostUSD
		it.progress.EarlierUsage = it.progress.EarlierUsage.Add(prev.Usage)
	}
}

// sessionLocks holds one lock per session (execution key): a retry
// waits for an earlier attempt of the same iteration that still runs in
// this process (its worker was frozen, its heartbeat timed out, and it
// has not yet seen its cancellation) before touching the workspace. A
// key's lock lives while an attempt holds it or waits for it, so a
// worker that runs sessions for months keeps none of those that ended.
var sessionLocks = struct {
	sync.Mutex
	m map[string]*sessionLock
}{m: map[string]*sessionLock{}}

// sessionLock is one key's lock and how many attempts hold or await it.
type sessionLock struct {
	ch    chan struct{}
	users int
}

// lockSession takes key's lock, or gives up when ctx ends.
func lockSession(ctx context.Context, key string) (unlock func(), err error) {
	sessionLocks.Lock()
	l := sessionLocks.m[key]
	if l == nil {
		l = &sessionLock{ch: make(chan struct{}, 1)}
		sessionLocks.m[key] = l
	}
	l.users++
	sessionLocks.Unlock()
	leave := func() {
		sessionLocks.Lock()
		defer sessionLocks.Unlock()
		if l.users--; l.users == 0 {
			delete(sessionLocks.m, key)
		}
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, fmt.Errorf("wait for the earlier attempt of this iteration to end: %w", ctx.Err())
	}
}
