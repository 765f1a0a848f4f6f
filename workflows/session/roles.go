package session

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// Routing between roles is decided here, from the session's state alone,
// so that it replays: the role of each iteration is in its activity's
// input. A session without Roles and Plan only ever runs executors, down
// the code paths sessions took before roles existed.

// roleField is role as the status and the results record it: empty for
// an executor, as before roles.
func roleField(role string) string {
	if role == contract.RoleExecutor {
		return ""
	}
	return role
}

// reviews reports whether the session has a reviewer.
func (s *session) reviews() bool {
	return s.in.Roles != nil && s.in.Roles.Reviewer != nil
}

// nextRole is the role of the next iteration: the reviewer when a
// completion claim waits for it or a periodic review is due, else the
// executor.
func (s *session) nextRole() string {
	if !s.reviews() {
		return contract.RoleExecutor
	}
	if s.st.ReviewPending {
		return contract.RoleReviewer
	}
	if every := s.in.Roles.ReviewEvery; every > 0 && s.st.SinceReview >= every && s.st.TaskFileBroken == 0 {
		return contract.RoleReviewer
	}
	return contract.RoleExecutor
}

// recordReview folds a reviewer's result into the session. A pass of a
// completion claim completes the session; a fail sends the loop on, its
// reasons in the next executor's prompt (res.Notices). A reviewer that
// failed to run counts as a failed iteration and runs again.
func (s *session) recordReview(res contract.IterationResult, sum *contract.IterationSummary) decision {
	if d, ok := s.countOutcome(res, " (the reviewer)"); !ok {
		return d
	}
	s.st.SinceReview = 0
	claim := s.st.ReviewPending
	s.st.ReviewPending = false
	if res.Review == nil {
		return decision{}
	}
	sum.Verdict = res.Review.Verdict
	if !res.Review.Passed() {
		sum.Reason = "the reviewer failed the work: " + firstLine(res.Review.Reasons)
		s.logger.Info("the reviewer failed the work", "iteration", s.st.Iteration)
		return decision{}
	}
	if !claim {
		return decision{}
	}
	sum.Verified = true
	return decision{complete: true, reason: contract.ReasonComplete, msg: fmt.Sprintf(
		"completion claimed, confirmed by %s and passed by the reviewer in iteration %d", res.Task.FileName(), s.st.Iteration)}
}

// plan runs planner iterations until prd.json holds a plan Ralph can run
// and, unless the session takes it as it is, a person approves it. A
// person who rejects the plan sends the planner back with the reason. It
// returns the session's end, if it ended.
func (s *session) plan(ctx workflow.Context) *end {
	req := &contract.PlanRequest{Idea: s.in.Plan.Idea}
	tries := 0
	for {
		if s.drains {
			s.drainSignals()
		}
		if e, reached := s.atLimit(ctx); reached {
			if e != nil {
				return e
			}
			continue
		}
		if s.st.Paused {
			if err := s.pause(ctx); err != nil {
				return endCancelled(err)
			}
			continue
		}
		res, timedOut, err := s.runIteration(ctx, contract.RolePlanner, req)
		if e := s.iterationFailed(ctx, contract.RolePlanner, &res, timedOut, err); e != nil {
			return e
		}
		if d := s.record(ctx, res); d.done {
			return endWith(d.reason, d.msg)
		}
		if res.Outcome == contract.OutcomeRateLimited {
			if err := s.sleepRateLimit(ctx, res); err != nil {
				return endCancelled(err)
			}
			continue
		}
		if res.Outcome != contract.OutcomeSuccess {
			continue
		}
		if res.Plan == nil || !res.Plan.Valid {
			tries++
			if e := s.replan(res.Plan, req, tries); e != nil {
				return e
			}
			continue
		}
		tries = 0
		if taken, e := s.approvePlan(ctx, res.Plan, req); taken || e != nil {
			return e
		}
	}
}

// replan sends the planner back after its tries-th plan that Ralph cannot
// run, or ends the session when the tries are used up.
func (s *session) replan(plan *contract.PlanResult, req *contract.PlanRequest, tries int) *end {
	why := "the planner left no prd.json"
	if plan != nil && plan.Error != "" {
		why = plan.Error
	}
	if tries >= contract.MaxPlanTries {
		return endWith(contract.ReasonTaskFileInvalid, fmt.Sprintf("the planner wrote no prd.json Ralph can run in %d tries; the last: %s", tries, why))
	}
	req.Feedback = "Ralph could not use the prd.json you wrote: " + why + ". Fix it."
	return nil
}

// approvePlan asks a person to approve the plan, unless the session
// takes it as it is (plan --yes). taken says work starts on it; a
// rejection's reason goes back to the planner in req.Feedback. It returns
// the session's end, if it ended.
func (s *session) approvePlan(ctx workflow.Context, plan *contract.PlanResult, req *contract.PlanRequest) (taken bool, e *end) {
	if s.in.Plan.Yes {
		return true, nil
	}
	s.status.Plan = plan.Stories
	it := s.st.Iteration
	g, reason, e := s.askGate(ctx, contract.Checkpoint{
		ID:        fmt.Sprintf("cp-%d-plan", it),
		Iteration: it,
		Kind:      contract.KindPlan,
		Type:      contract.CheckpointHumanVerify,
		Question:  fmt.Sprintf("The planner wrote %d stories into %s. Approve the plan to start working on it, or reject it with a reason for the planner to revise it.", len(plan.Stories), contract.PRDFile),
		Options:   []string{"approve", "reject"},
		Context:   contract.PlanText(plan.Stories),
	}, fmt.Sprintf("nobody approved the plan within %s", s.in.Checkpoints.Timeout))
	s.status.Plan = nil
	switch {
	case e != nil:
		return false, e
	case g == gatePassed, g == gateTimedOut:
		return true, nil
	case g == gateStopping:
		return false, nil // the loop stops at the top
	}
	req.Feedback = "A person read the plan and rejected it: " + reason
	return false, nil
}

// iterationFailed handles what ends an iteration without a result: the
// host gone for good, a cancellation, an error no retry fixes, the
// runtime running out; it returns the session's end. Other errors become
// a failed result in res.
func (s *session) iterationFailed(ctx workflow.Context, role string, res *contract.IterationResult, timedOut bool, err error) *end {
	if errors.Is(err, flow.ErrStoppedOffline) {
		// The iteration never ran: its host went away and a person
		// gave up waiting for it.
		s.st.Iteration--
		return endWith(contract.ReasonStopped, fmt.Sprintf("%s while host %s was offline (iteration %d did not run)",
			s.stopReason, s.in.Host, s.st.Iteration+1))
	}
	if err != nil {
		if temporal.IsCanceledError(err) || ctx.Err() != nil {
			return endCancelled(err)
		}
		if flow.IsPermanent(err) {
			return endFailed(err)
		}
		*res = contract.IterationResult{
			Iteration: s.st.Iteration,
			Role:      roleField(role),
			Outcome:   contract.OutcomeAgentError,
			Reason:    "iteration failed after retries: " + flow.RootMessage(err),
		}
		p := s.lastBeatCost(ctx, err, res)
		if workflow.GetVersion(ctx, "recover-uncounted", workflow.DefaultVersion, 1) == 1 && len(s.st.Uncounted) < uncountedLimit {
			// Its last run may have finished while its worker stood still:
			// the next iteration counts what its saved stream says it cost
			// beyond this (p: the last heartbeat's own).
			u := contract.UncountedRun{Iteration: s.st.Iteration}
			if p != nil {
				u.Attempt, u.CostUSD, u.Usage = p.Attempt, p.CostUSD, p.Usage
			}
			s.st.Uncounted = append(s.st.Uncounted, u)
		}
	}
	if timedOut {
		return endWith(contract.ReasonMaxRuntime, fmt.Sprintf("max runtime %s reached during iteration %d", s.st.Limits.MaxRuntime, s.st.Iteration))
	}
	return nil
}

// lastBeatCost counts in res what the last attempt of an iteration that
// failed after retries reported in its last heartbeat, when its heartbeat
// timed out (from GetVersion failed-cost 1 on; before, nothing was
// counted), and returns that heartbeat (nil when it counted nothing).
func (s *session) lastBeatCost(ctx workflow.Context, err error, res *contract.IterationResult) *contract.Progress {
	var te *temporal.TimeoutError
	if !errors.As(err, &te) || !te.HasLastHeartbeatDetails() {
		return nil
	}
	var p contract.Progress
	if te.LastHeartbeatDetails(&p) != nil || p.CostUSD+p.EarlierCostUSD == 0 && p.Usage.Add(p.EarlierUsage).Total() == 0 {
		return nil
	}
	if workflow.GetVersion(ctx, "failed-cost", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	res.CostUSD, res.Usage = p.CostUSD+p.EarlierCostUSD, p.Usage.Add(p.EarlierUsage)
	return &p
}

// uncountedLimit bounds the iterations waiting to have their last run
// counted: more in a row than this failed for good.
const uncountedLimit = 8

// recordPlan folds a planner's result into the session.
func (s *session) recordPlan(res contract.IterationResult, sum *contract.IterationSummary) decision {
	if d, ok := s.countOutcome(res, " (the planner)"); !ok {
		return d
	}
	switch p := res.Plan; {
	case p == nil:
		sum.Reason = "the planner left no plan"
	case p.Valid:
		sum.Story = fmt.Sprintf("plan: %d stories", len(p.Stories))
	default:
		sum.Reason = "the plan is not valid: " + p.Error
	}
	return decision{}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
