package contract

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// What happens when nobody answers a checkpoint in time.
const (
	// OnTimeoutContinue carries on without the human: an agent's question
	// is answered "no answer, use your judgement", a gate counts as
	// approved.
	OnTimeoutContinue = "continue"
	// OnTimeoutStop ends the session as checkpoint_timeout.
	OnTimeoutStop = "stop"
)

// CheckpointSettings configures human checkpoints.
type CheckpointSettings struct {
	// Every asks a human to review after every Every iterations; 0 is off.
	Every int `json:"every,omitempty"`
	// BeforeComplete makes a human confirm before the session ends complete.
	BeforeComplete bool `json:"before_complete,omitempty"`
	// Timeout bounds the wait for an answer; 0 waits as long as it takes.
	Timeout time.Duration `json:"timeout,omitempty"`
	// OnTimeout is OnTimeoutContinue (the default) or OnTimeoutStop.
	OnTimeout string `json:"on_timeout,omitempty"`
}

// Checkpoint kinds: who asked.
const (
	KindAgent      = "agent"      // the agent asked a question
	KindReview     = "review"     // the every-N-iterations gate
	KindCompletion = "completion" // the before-complete gate
	KindPlan       = "plan"       // the plan of starter plan, before work starts
	KindLimit      = "limit"      // a limit was reached with limits.on-limit ask
	KindBudget     = "budget"     // an issue queue spent its daily budget (queue.max-cost-per-day)
)

// Checkpoint is a question to a human that the session (or, for
// KindBudget, the issue queue) waits on.
type Checkpoint struct {
	// ID names the checkpoint in answers, so a late answer cannot answer
	// the next question.
	ID        string `json:"id"`
	Iteration int    `json:"iteration"`
	Kind      string `json:"kind"`
	// Type is human-verify, decision or human-action.
	Type     string    `json:"type"`
	Question string    `json:"question"`
	Options  []string  `json:"options,omitempty"`
	Context  string    `json:"context,omitempty"`
	AskedAt  time.Time `json:"asked_at"`
	// Deadline is when the checkpoint times out; zero means never.
	Deadline time.Time `json:"deadline,omitempty"`
}

// Answer is the payload of the checkpoint signal and the respond update.
// Exactly one of Approve, Reject or a non-empty Answer is expected;
// Reason goes with Reject (and may go with Approve).
type Answer struct {
	ID      string `json:"id"`
	Approve bool   `json:"approve,omitempty"`
	Reject  bool   `json:"reject,omitempty"`
	Answer  string `json:"answer,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// By and Via say who answered and through what ("starter respond"),
	// for the people who follow the session; empty for an answer that
	// does not say (a signal sent by hand from the Temporal UI).
	By  string `json:"by,omitempty"`
	Via string `json:"via,omitempty"`
}

// Said is how a person reads what a answered: "approved", "rejected: …",
// "answered: …".
func (a Answer) Said() string {
	switch {
	case a.Approve:
		if a.Reason != "" {
			return "approved: " + a.Reason
		}
		return "approved"
	case a.Reject:
		if a.Reason != "" {
			return "rejected: " + a.Reason
		}
		return "rejected"
	}
	return "answered: " + a.Answer
}

// Who is who answered and through what, as far as a says: "by alice
// through starter respond", or "through a signal" when it says nothing.
func (a Answer) Who() string {
	via := a.Via
	if via == "" {
		via = "a " + SignalCheckpoint + " signal"
	}
	if a.By == "" {
		return "through " + via
	}
	return "by " + a.By + " through " + via
}

// AnsweredCheckpoint is a checkpoint with what became of it.
type AnsweredCheckpoint struct {
	Checkpoint Checkpoint `json:"checkpoint"`
	Answer     Answer     `json:"answer"`
	TimedOut   bool       `json:"timed_out,omitempty"`
	AnsweredAt time.Time  `json:"answered_at"`
}

// RespondResult is what the respond update returns.
type RespondResult struct {
	ID        string `json:"id"`
	Iteration int    `json:"iteration"`
	Message   string `json:"message"`
}

// AnswerFrom reads a person's reply (a comment or a chat message) as
// the answer to cp: "approve" (or "lgtm",
// "yes") approves and "reject" (or "no"), followed by a reason, rejects a
// question with those options; anything else is the answer's text.
func (cp Checkpoint) AnswerFrom(text string) Answer {
	ans := Answer{ID: cp.ID}
	word, rest, _ := strings.Cut(strings.TrimSpace(text), " ")
	if w, r, ok := strings.Cut(word, ":"); ok {
		word, rest = w, strings.TrimSpace(r+" "+rest)
	}
	verdict := strings.ToLower(strings.Trim(word, ".,!:;*_`"))
	gate := cp.Type == CheckpointHumanVerify || len(cp.Options) == 0
	for _, o := range cp.Options {
		gate = gate || strings.EqualFold(o, "approve")
	}
	switch {
	case gate && (verdict == "approve" || verdict == "approved" || verdict == "lgtm" || verdict == "yes"):
		ans.Approve, ans.Reason = true, strings.TrimSpace(rest)
	case gate && (verdict == "reject" || verdict == "rejected" || verdict == "no"):
		ans.Reject, ans.Reason = true, strings.TrimSpace(strings.TrimLeft(rest, ":- "))
	default:
		ans.Answer = strings.TrimSpace(text)
	}
	return ans
}

// AnswerText is how ans to cp reaches the next iteration's prompt;
// timedOut says nobody answered within timeout.
func (cp Checkpoint) AnswerText(ans Answer, timedOut bool, timeout string) string {
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

// Validate accepts ans only for the pending checkpoint cp (nil when none
// is) that is not answered yet, so an answer that arrives late can never
// answer the next question.
func (ans Answer) Validate(cp *Checkpoint, answered bool) error {
	switch {
	case cp == nil:
		return errors.New("no checkpoint is pending")
	case answered:
		return fmt.Errorf("checkpoint %s is already answered", cp.ID)
	case ans.ID != cp.ID:
		return fmt.Errorf("checkpoint %q is not pending; the pending checkpoint is %s", ans.ID, cp.ID)
	case ans.Approve && ans.Reject:
		return errors.New("an answer cannot both approve and reject")
	case !ans.Approve && !ans.Reject && strings.TrimSpace(ans.Answer) == "":
		return errors.New("an answer must approve, reject or give an answer text")
	case len(ans.Answer)+len(ans.Reason) > MessageLimit:
		return fmt.Errorf("the answer and its reason are %d bytes; at most %d (16 KiB) are taken: put the rest in a file of the workspace and point to it", len(ans.Answer)+len(ans.Reason), MessageLimit)
	}
	return nil
}
