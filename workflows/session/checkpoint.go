package session

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/flow"
	"github.com/durable-ralph/ralph/workflows/session/question"
)

// answeredLimit bounds the answered checkpoints kept in the status.
const answeredLimit = 5

// registerUpdates installs the respond and set-limits update handlers.
// Their validators reject what must never be applied, before anything is
// written to history.
func (s *session) registerUpdates(ctx workflow.Context) error {
	err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateRespond, func(ctx workflow.Context, ans contract.Answer) (contract.RespondResult, error) {
		cp := *s.status.Pending
		s.answer = &ans
		return contract.RespondResult{
			ID:        cp.ID,
			Iteration: cp.Iteration,
			Message:   fmt.Sprintf("answer to %s recorded; the session goes on", cp.ID),
		}, nil
	},
		workflow.UpdateHandlerOptions{
			Validator:   func(ans contract.Answer) error { return ans.Validate(s.status.Pending, s.answer != nil) },
			Description: "Answer the pending checkpoint (approve, reject with a reason, or a free-text answer); rejected unless the ID is the pending one",
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", contract.UpdateRespond, err)
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateSetLimits, func(ctx workflow.Context, req contract.SetLimitsRequest) (contract.Limits, error) {
		s.applyLimits(ctx, req)
		if p := s.status.Pending; p != nil && p.Kind == contract.KindLimit && s.answer == nil {
			// The limit question is answered when the limits as they
			// stood at the question no longer stop the session.
			if _, _, still := s.limitReachedAt(p.AskedAt); !still {
				s.answer = &contract.Answer{ID: p.ID, Approve: true, Answer: "limits raised: " + limitsText(s.st.Limits), Via: "set-limits"}
			}
		}
		s.publish(ctx)
		return s.st.Limits, nil
	},
		workflow.UpdateHandlerOptions{
			Validator: func(ctx workflow.Context, req contract.SetLimitsRequest) error {
				return req.Validate(s.st.Iteration, s.st.Totals.CostUSD, s.workingTime(ctx))
			},
			Description: "Change max iterations, runtime or cost; a limit below what the session already used is rejected",
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", contract.UpdateSetLimits, err)
	}
	return nil
}

func (s *session) addGuidance(text string) {
	s.st.Guidance = append(s.st.Guidance, text)
}

// ask makes cp the pending checkpoint and waits durably for its answer,
// for as long as it takes or until the configured timeout. It returns the
// answer, or timedOut; with neither, a stop request ended the wait. The
// wait does not count against the runtime limit.
func (s *session) ask(ctx workflow.Context, cp contract.Checkpoint) (ans contract.Answer, timedOut bool, err error) {
	start := workflow.Now(ctx)
	cp.AskedAt = start
	timeout := s.in.Checkpoints.Timeout
	if timeout > 0 {
		cp.Deadline = start.Add(timeout)
	}
	s.status.Pending = &cp
	s.answer = nil
	if s.in.Issue != nil {
		s.setState(ctx, contract.StateWaitingForAnswer)
	} else {
		s.setState(ctx, contract.StateAwaitingHuman)
	}
	s.logger.Info("waiting for a human", "checkpoint", cp.ID, "kind", cp.Kind, "question", cp.Question)
	s.notifyAsk(ctx, cp)

	answered := func() bool { return s.answer != nil || s.stopReason != "" }
	ok := true
	switch {
	case s.in.Issue != nil:
		q := question.Question{Link: *s.in.Issue, Checkpoint: cp, SoFar: s.soFar(), Logger: s.logger}
		ok, err = q.Await(ctx, issueWaiter{s}, timeout)
	case timeout > 0:
		ok, err = workflow.AwaitWithTimeout(ctx, timeout, answered)
	default:
		err = workflow.Await(ctx, answered)
	}
	s.status.Pending = nil
	if err != nil {
		return contract.Answer{}, false, err
	}
	s.humanWaitSince(ctx, start)
	switch {
	case s.answer != nil:
		ans = *s.answer
		s.answer = nil
	case !ok:
		timedOut = true
	default:
		return contract.Answer{}, false, nil // stop requested
	}
	s.st.Answered = append(s.st.Answered, contract.AnsweredCheckpoint{
		Checkpoint: cp, Answer: ans, TimedOut: timedOut, AnsweredAt: workflow.Now(ctx),
	})
	if n := len(s.st.Answered); n > answeredLimit {
		s.st.Answered = append([]contract.AnsweredCheckpoint(nil), s.st.Answered[n-answeredLimit:]...)
	}
	s.setState(ctx, contract.StateRunning)
	return ans, timedOut, nil
}

func (s *session) stopOnTimeout() bool {
	return s.in.Checkpoints.OnTimeout == contract.OnTimeoutStop
}

// gate is what a person made of a gate: a human-verify checkpoint that
// lets the session go on (confirm completion, approve a plan).
type gate int

const (
	gatePassed   gate = iota // approved
	gateTimedOut             // nobody answered in time; the session takes it as passed
	gateRejected             // rejected, with a reason
	gateStopping             // a stop came first: the loop stops at its top
)

// askGate asks cp and waits for the answer. A rejection's reason is
// returned; a cancellation, or a timeout when the session stops on one
// (with timeoutMsg), is the session's end.
func (s *session) askGate(ctx workflow.Context, cp contract.Checkpoint, timeoutMsg string) (gate, string, *end) {
	ans, timedOut, err := s.ask(ctx, cp)
	switch {
	case err != nil:
		return 0, "", endCancelled(err)
	case timedOut && s.stopOnTimeout():
		return 0, "", endWith(contract.ReasonCheckpointTimeout, timeoutMsg)
	case timedOut:
		return gateTimedOut, "", nil
	case ans.Approve:
		return gatePassed, "", nil
	case s.stopReason != "" && !ans.Reject && ans.Answer == "":
		return gateStopping, "", nil
	}
	reason := strings.TrimSpace(ans.Reason + " " + ans.Answer)
	if reason == "" {
		reason = "no reason given"
	}
	return gateRejected, reason, nil
}

// confirmCompletion ends the session complete, unless a human must confirm
// first and rejects, which sends the loop on with the reason (nil).
func (s *session) confirmCompletion(ctx workflow.Context, msg string) *end {
	if !s.in.Checkpoints.BeforeComplete {
		return endWith(contract.ReasonComplete, msg)
	}
	it := s.st.Iteration
	g, reason, e := s.askGate(ctx, contract.Checkpoint{
		ID:        fmt.Sprintf("cp-%d-complete", it),
		Iteration: it,
		Kind:      contract.KindCompletion,
		Type:      contract.CheckpointHumanVerify,
		Question:  fmt.Sprintf("The agent claims the work is complete and %s agrees (%d of %d done). Approve to end the session as complete, or reject with a reason to send the loop on.", s.st.Prepared.Task.FileName(), s.st.Prepared.Task.Done, s.st.Prepared.Task.Total),
		Options:   []string{"approve", "reject"},
		Context:   msg,
	}, fmt.Sprintf("nobody confirmed completion within %s", s.in.Checkpoints.Timeout))
	switch {
	case e != nil:
		return e
	case g == gateTimedOut:
		return endWith(contract.ReasonComplete, msg+"; not confirmed within "+s.in.Checkpoints.Timeout.String()+", completed without confirmation")
	case g == gatePassed:
		return endWith(contract.ReasonComplete, msg+"; confirmed by a human")
	case g == gateStopping:
		return nil // the loop stops at the top
	}
	s.addGuidance(fmt.Sprintf("A human reviewed your claim that the work is complete and did not accept it: %s. Address this before you claim completion again.", reason))
	return nil
}

// checkpoints asks the agent's question, if it asked one, and the
// periodic review gate, if one is due. It returns the session's end when
// it ended (a checkpoint timed out with on-timeout stop, a cancellation).
func (s *session) checkpoints(ctx workflow.Context, res contract.IterationResult) *end {
	if res.Outcome == contract.OutcomeRateLimited {
		return nil
	}
	it := s.st.Iteration
	if q := res.Checkpoint; q != nil {
		cp := contract.Checkpoint{
			ID:        fmt.Sprintf("cp-%d", it),
			Iteration: it,
			Kind:      contract.KindAgent,
			Type:      q.Type,
			Question:  q.Question,
			Options:   q.Options,
			Context:   q.Context,
		}
		ans, timedOut, err := s.ask(ctx, cp)
		if err != nil {
			return endCancelled(err)
		}
		if timedOut && s.stopOnTimeout() {
			return endWith(contract.ReasonCheckpointTimeout, fmt.Sprintf("checkpoint %s was not answered within %s", cp.ID, s.in.Checkpoints.Timeout))
		}
		if timedOut || ans != (contract.Answer{}) {
			s.addGuidance(cp.AnswerText(ans, timedOut, s.in.Checkpoints.Timeout.String()))
		}
	}
	if every := s.in.Checkpoints.Every; every > 0 && it%every == 0 && s.stopReason == "" {
		cp := contract.Checkpoint{
			ID:        fmt.Sprintf("cp-%d-review", it),
			Iteration: it,
			Kind:      contract.KindReview,
			Type:      contract.CheckpointHumanVerify,
			Question:  fmt.Sprintf("%d iterations done (%d of %d tasks in %s). Review the work, then approve to continue, or reject with what to change.", it, s.st.Prepared.Task.Done, s.st.Prepared.Task.Total, s.st.Prepared.Task.FileName()),
			Options:   []string{"approve", "reject"},
		}
		ans, timedOut, err := s.ask(ctx, cp)
		if err != nil {
			return endCancelled(err)
		}
		if timedOut && s.stopOnTimeout() {
			return endWith(contract.ReasonCheckpointTimeout, fmt.Sprintf("review %s was not answered within %s", cp.ID, s.in.Checkpoints.Timeout))
		}
		if text := strings.TrimSpace(ans.Reason + " " + ans.Answer); text != "" {
			s.addGuidance("A human reviewed the work so far: " + text)
		}
	}
	return nil
}

// ignoredLimit bounds the ignored comments a session's status lists.
const ignoredLimit = 20

// issueWaiter is the session as it waits for the answer to a question
// asked on its issue.
type issueWaiter struct{ s *session }

func (w issueWaiter) Answered() bool           { return w.s.answer != nil || w.s.stopReason != "" }
func (w issueWaiter) Answer() *contract.Answer { return w.s.answer }
func (w issueWaiter) Take(ans contract.Answer) { w.s.answer = &ans }
func (w issueWaiter) Ignore(c contract.Ignored) {
	w.s.status.Ignored = flow.AppendBounded(w.s.status.Ignored, c, ignoredLimit)
}

// soFar says what the session did so far, for a question on its issue.
func (s *session) soFar() string {
	t := s.st.Totals
	text := fmt.Sprintf("So far: %d iterations, %d commits, %.4f USD.", s.st.Iteration, t.Commits, t.CostUSD)
	if n := len(s.st.Recent); n > 0 {
		text += " Last: " + s.st.Recent[n-1].Line() + "."
	}
	return text
}
