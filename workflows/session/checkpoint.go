package session

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
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
			Validator:   s.validateAnswer,
			Description: "Answer the pending checkpoint (approve, reject with a reason, or a free-text answer); rejected unless the ID is the pending one",
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", contract.UpdateRespond, err)
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateSetLimits, func(ctx workflow.Context, req contract.SetLimitsRequest) (contract.Limits, error) {
		if req.MaxIterations > 0 {
			s.st.Limits.MaxIterations = req.MaxIterations
		}
		if req.MaxRuntime > 0 {
			s.st.Limits.MaxRuntime = req.MaxRuntime
		}
		if req.MaxCostUSD > 0 {
			s.st.Limits.MaxCostUSD = req.MaxCostUSD
		}
		s.armDeadline(ctx)
		s.publish(ctx)
		return s.st.Limits, nil
	},
		workflow.UpdateHandlerOptions{
			Validator: func(ctx workflow.Context, req contract.SetLimitsRequest) error {
				return s.validateLimits(ctx, req)
			},
			Description: "Change max iterations, runtime or cost; a limit below what the session already used is rejected",
		})
	if err != nil {
		return fmt.Errorf("register %s update: %w", contract.UpdateSetLimits, err)
	}
	return nil
}

// validateAnswer accepts an answer only for the pending checkpoint, so an
// answer that arrives late can never answer the next question.
func (s *session) validateAnswer(ans contract.Answer) error {
	cp := s.status.Pending
	switch {
	case cp == nil:
		return errors.New("no checkpoint is pending")
	case s.answer != nil:
		return fmt.Errorf("checkpoint %s is already answered", cp.ID)
	case ans.ID != cp.ID:
		return fmt.Errorf("checkpoint %q is not pending; the pending checkpoint is %s", ans.ID, cp.ID)
	case ans.Approve && ans.Reject:
		return errors.New("an answer cannot both approve and reject")
	case !ans.Approve && !ans.Reject && strings.TrimSpace(ans.Answer) == "":
		return errors.New("an answer must approve, reject or give an answer text")
	case len(ans.Answer)+len(ans.Reason) > contract.MessageLimit:
		return fmt.Errorf("the answer and its reason are %d bytes; at most %d (16 KiB) are taken: put the rest in a file of the workspace and point to it", len(ans.Answer)+len(ans.Reason), contract.MessageLimit)
	}
	return nil
}

func (s *session) validateLimits(ctx workflow.Context, req contract.SetLimitsRequest) error {
	var problems []string
	if req.MaxIterations < 0 || req.MaxRuntime < 0 || req.MaxCostUSD < 0 {
		problems = append(problems, "limits must not be negative")
	}
	if req == (contract.SetLimitsRequest{}) {
		problems = append(problems, "no limit given")
	}
	if req.MaxIterations > 0 && req.MaxIterations < s.st.Iteration {
		problems = append(problems, fmt.Sprintf("max iterations %d is below the %d iterations already run", req.MaxIterations, s.st.Iteration))
	}
	if req.MaxCostUSD > 0 && req.MaxCostUSD < s.st.Totals.CostUSD {
		problems = append(problems, fmt.Sprintf("max cost $%.2f is below the $%.4f already spent", req.MaxCostUSD, s.st.Totals.CostUSD))
	}
	if used := s.workingTime(ctx); req.MaxRuntime > 0 && req.MaxRuntime < used {
		problems = append(problems, fmt.Sprintf("max runtime %s is below the %s already used", req.MaxRuntime, used.Round(time.Second)))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
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
		ok, err = s.awaitOnIssue(ctx, cp, timeout, answered)
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
		Question:  fmt.Sprintf("The agent claims the work is complete and %s agrees (%d of %d done). Approve to end the session as complete, or reject with a reason to send the loop on.", taskFileName(s.st.Prepared.Task), s.st.Prepared.Task.Done, s.st.Prepared.Task.Total),
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
			s.addGuidance(answerText(cp, ans, timedOut, s.in.Checkpoints.Timeout.String()))
		}
	}
	if every := s.in.Checkpoints.Every; every > 0 && it%every == 0 && s.stopReason == "" {
		cp := contract.Checkpoint{
			ID:        fmt.Sprintf("cp-%d-review", it),
			Iteration: it,
			Kind:      contract.KindReview,
			Type:      contract.CheckpointHumanVerify,
			Question:  fmt.Sprintf("%d iterations done (%d of %d tasks in %s). Review the work, then approve to continue, or reject with what to change.", it, s.st.Prepared.Task.Done, s.st.Prepared.Task.Total, taskFileName(s.st.Prepared.Task)),
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

// answerText is how an answer reaches the next iteration's prompt.
func answerText(cp contract.Checkpoint, ans contract.Answer, timedOut bool, timeout string) string {
	q := fmt.Sprintf("Your checkpoint %s (%s) asked: %q.", cp.ID, cp.Type, cp.Question)
	switch {
	case timedOut:
		return q + " Nobody answered within " + timeout + ": proceed with your best judgement and record the assumption you made."
	case ans.Approve:
		q += " The human approved."
	case ans.Reject:
		q += " The human rejected."
	}
	if ans.Answer != "" {
		q += fmt.Sprintf(" The human answered: %q.", ans.Answer)
	}
	if ans.Reason != "" {
		q += fmt.Sprintf(" Reason: %q.", ans.Reason)
	}
	return q
}
