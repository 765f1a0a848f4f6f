package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/process"
	"github.com/durable-ralph/ralph/redact"
	"github.com/durable-ralph/ralph/sandbox"
)

// agentRun is what one agent process produced.
type agentRun struct {
	summary agent.Summary
	verdict agent.Verdict
	// resumeFailed says a run that was to resume the agent's session
	// found no such session.
	resumeFailed bool
	// live are the agent's last events, and started when it started.
	live    []contract.LiveEvent
	started time.Time
	// contained names the sandbox the agent ran in ("" for none), and
	// refused are the destinations its egress proxy refused.
	contained string
	refused   []string
}

// defaultAgentTimeout bounds an agent run whose session set no timeout.
const defaultAgentTimeout = 30 * time.Minute

// runAgent runs the agent of backend (process.Run), feeds it the prompt,
// parses its stream while heartbeating, and classifies the end. A run
// resumes the agent's session resume when it is not empty. The iteration
// ends when the agent process exits: whatever it left running is ended,
// so a background job that keeps stdout open neither holds the iteration
// until its timeout nor outlives it.
func (a *Agent) runAgent(ctx context.Context, in contract.IterationInput, backend agent.Backend, prompt, resume string, logw io.Writer, progress *contract.Progress, beat func(contract.Progress)) (agentRun, error) {
	bin, err := exec.LookPath(in.Agent.Command[0])
	if err != nil {
		return agentRun{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("agent binary %q not found on the worker's PATH: %v", in.Agent.Command[0], err), contract.ErrTypeAgentNotFound, err,
			contract.AgentProblem{Backend: backend.Name(), Binary: in.Agent.Command[0]})
	}
	timeout := in.Agent.Timeout
	if timeout <= 0 {
		timeout = defaultAgentTimeout
	}
	runCtx, cancelRun := context.WithTimeout(ctx, timeout)
	defer cancelRun()

	opts := backendOptions(in.Agent)
	c, err := a.contain(in, backend, sandbox.Command{
		Path: bin,
		Args: append(append([]string(nil), in.Agent.Command[1:]...), backend.Args(opts, resume)...),
		Env:  append(backend.Env(opts), a.agentEnv()...),
	})
	if err != nil {
		return agentRun{}, err
	}
	st := &stream{
		parser: backend.NewParser(opts),
		live:   &liveLog{redact: a.Redact, dir: in.Workspace},
		log:    &cappedWriter{w: logw, max: a.maxLog()},
		redact: a.Redact,
	}
	progress.StartedAt = time.Now()
	stopBeats := a.beatEvery(func() { beat(st.progress(*progress)) })
	res, err := process.Run(runCtx, process.Spec{
		Path:       c.cmd.Path,
		Args:       c.cmd.Args,
		Dir:        in.Workspace,
		Env:        c.cmd.Env,
		Guarded:    c.cmd.Guarded,
		ExtraFiles: c.cmd.Files,
		Ready:      c.cmd.Ready,
		Spawn:      c.cmd.Spawn,
		Stdin:      strings.NewReader(prompt),
		MaxLine:    a.maxLine(),
		OnLine:     st.line,
		StderrTail: 8 << 10,
		OnStart:    a.agentStarted,
	})
	stopBeats()
	refused := c.close()
	if len(refused) > 0 && activity.IsActivity(ctx) {
		activity.GetLogger(ctx).Warn("The sandbox refused the agent network destinations", "Iteration", in.Iteration, "Refused", refused)
	}
	if err != nil {
		return agentRun{}, startFailure(err, in, backend, bin)
	}
	// Cancellation of the activity (heartbeat timeout, session runtime
	// limit, a stop by hand) is an error for Temporal; the end of the
	// iteration's own time budget is a result.
	if ctx.Err() != nil {
		return agentRun{}, fmt.Errorf("agent iteration %d: %w", in.Iteration, ctx.Err())
	}
	run := st.run(progress.StartedAt)
	run.contained, run.refused = c.box, refused
	if runCtx.Err() != nil {
		run.verdict = agent.Verdict{
			Outcome: contract.OutcomeTimeout,
			Reason:  fmt.Sprintf("agent ran longer than the iteration timeout of %s and was killed", timeout),
		}
		return run, nil
	}
	run.verdict = st.parser.Verdict(res.Err, res.Stderr, time.Now())
	// A backend may learn that the session was missing from stderr,
	// which Verdict read.
	run.resumeFailed = resume != "" && st.parser.ResumeFailed()
	return run, nil
}

// startFailure is the error of an agent process that did not start:
// retried when its sandbox could not be set up (the worker found at its
// start that it can set sandboxes up), for good when its binary could not
// be run.
func startFailure(err error, in contract.IterationInput, backend agent.Backend, bin string) error {
	if errors.Is(err, sandbox.ErrStart) {
		return fmt.Errorf("agent iteration %d: %w", in.Iteration, err)
	}
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("start agent %q: %v", bin, err), contract.ErrTypeAgentNotFound, err,
		contract.AgentProblem{Backend: backend.Name(), Binary: in.Agent.Command[0]})
}

// beatEvery calls fn every heartbeat interval until the returned stop,
// which returns once fn no longer runs. The first call waits one
// interval: an agent that is done sooner needs no beat, and each beat is
// a write on the server.
func (a *Agent) beatEvery(fn func()) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(a.heartbeatInterval())
		defer t.Stop()
		for {
			select {
			case <-t.C:
				fn()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// stream is the agent's stdout as it is read: saved to the log, parsed,
// and shown live. Lines arrive on one goroutine while heartbeats read
// the progress on another.
type stream struct {
	mu     sync.Mutex
	parser agent.Parser
	live   *liveLog
	log    *cappedWriter
	redact *redact.Redactor
}

// line takes one line of the agent's stdout.
func (s *stream) line(line []byte, tooLong bool) {
	if !tooLong {
		_, _ = s.log.Write(s.redact.Bytes(line))
		_, _ = s.log.Write([]byte{'\n'})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tooLong {
		s.parser.Oversized()
		return
	}
	if ev, err := s.parser.Line(line); err == nil { // garbage lines are counted in the summary
		s.live.add(ev, time.Now())
	}
}

// progress is p with what the stream says so far.
func (s *stream) progress(p contract.Progress) contract.Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := s.parser.Summary().Sane()
	if sum.SessionID != "" {
		p.AgentSessionID = sum.SessionID
	}
	p.CostUSD, p.Usage, p.Turns, p.Events, p.LastTool = sum.CostUSD, sum.Usage, sum.Turns, sum.Events, sum.LastTool
	p.Live = s.live.snapshot()
	p.Tail = tail(p.StartedAt, p.Live)
	p.UpdatedAt = time.Now()
	return p
}

// run is what the stream said, once the agent is gone.
func (s *stream) run(started time.Time) agentRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return agentRun{summary: s.parser.Summary().Sane(), live: s.live.snapshot(), started: started}
}
