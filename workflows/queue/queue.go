// Package queue holds the IssueQueue workflow: the queue of a
// repository's ready-labelled GitHub issues, each worked on by an
// IssueWork workflow (package issue) and its pull request followed to
// its merge (package pull).
package queue

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
	"github.com/durable-ralph/ralph/workflows/issue"
	"github.com/durable-ralph/ralph/workflows/notify"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
)

// Bounds of what a queue keeps and carries.
const (
	queueRecentLimit = 10
	queueEventLimit  = 50
	queueSkipLimit   = 20
	// queuePollsPerRun bounds the idle polls of one run: a queue idle for
	// weeks continues as new before its history grows large.
	queuePollsPerRun = 100
)

// IssueQueue works through a repository's GitHub issues that carry the
// ready label: it picks the oldest issue a trusted person labelled and
// starts an IssueWork workflow for it (queue.parallel of them at once),
// which claims it, runs a child Session in a work tree of its own, pushes
// the branch, opens the pull request and starts its follower. Each time
// an issue ends the queue continues as new, so its history stays small.
// With nothing to do it sleeps on a timer for the poll interval (a poke
// signal wakes it).
func IssueQueue(ctx workflow.Context, in contract.QueueInput) (contract.QueueResult, error) {
	q, err := newQueue(ctx, in)
	if err != nil {
		return contract.QueueResult{}, err
	}
	return q.run(ctx)
}

// queue is one workflow run of an issue queue. Its state is st, the
// carry-over itself, handed on whole by continue-as-new; status holds
// what the status query shows beyond it (statusNow).
type queue struct {
	in      contract.QueueInput
	st      contract.QueueCarryOver
	logger  log.Logger
	status  contract.QueueStatus
	pending []contract.SessionProgress
	sig     queueSignals
	polls   int
	// host routes the git activities to the clone's machine.
	host flow.Host
	// beforeOffline is the state to go back to when the host is back.
	beforeOffline contract.State
	// ended counts the issues whose end this run took (issueEnded): the
	// queue continues as new after each.
	ended int
	// checkedAt is when this run last asked which issues' workflows
	// still run.
	checkedAt time.Time
	// notes sends the queue's notifications (in an IssueWork, the
	// issue's).
	notes notify.Notifier
}

type queueSignals struct {
	stop, pause, resume, guide, withdraw, poke, progress, pullEnded workflow.ReceiveChannel
	issueEvent, issueEnded                                          workflow.ReceiveChannel
}

func newQueue(ctx workflow.Context, in contract.QueueInput) (*queue, error) {
	if err := issue.Validate(in.Settings, in.Session); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
	}
	info := workflow.GetInfo(ctx)
	q := &queue{in: in}
	q.host = flow.Host{ID: in.Session.Host, Timeout: in.Session.HostTimeout, Offline: q.hostOffline}
	q.status = contract.QueueStatus{
		QueueID:  info.WorkflowExecution.ID,
		Repo:     in.Settings.Repo.FullName(),
		Clone:    in.Settings.Clone,
		Label:    in.Settings.Label,
		State:    contract.StateStarting,
		Settings: in.Settings,
	}
	q.st.StartedAt = workflow.Now(ctx)
	if c := in.CarryOver; c != nil {
		q.st = *c
	}
	q.st.Runs++
	q.status.BaseBranch = q.base()
	q.logger = log.With(workflow.GetLogger(ctx), "queue", q.status.QueueID)
	q.notes = notify.Notifier{Session: q.status.Repo + " queue", Logger: q.logger}
	if err := workflow.SetQueryHandlerWithOptions(ctx, contract.QueryStatus, func() (contract.QueueStatus, error) {
		return q.statusNow(), nil
	}, workflow.QueryHandlerOptions{Description: "State, current issue, recent outcomes and totals of this issue queue"}); err != nil {
		return nil, fmt.Errorf("register %s query: %w", contract.QueryStatus, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateSetLimits, q.setLimits, workflow.UpdateHandlerOptions{
		Validator:   q.validateLimits,
		Description: "Change the queue's cost limits: in all (max_cost_usd) and a UTC day's (max_cost_per_day); a raised daily budget wakes a queue in budget_wait",
	}); err != nil {
		return nil, fmt.Errorf("register %s update: %w", contract.UpdateSetLimits, err)
	}
	if err := q.registerRespond(ctx); err != nil {
		return nil, err
	}
	ch := func(name, desc string) workflow.ReceiveChannel {
		return workflow.GetSignalChannelWithOptions(ctx, name, workflow.SignalChannelOptions{Description: desc})
	}
	q.sig = queueSignals{
		stop:       ch(contract.SignalStop, "Finish the current issue, then end the queue as stopped"),
		pause:      ch(contract.SignalPause, "Take no new issue until resumed (the current one finishes)"),
		resume:     ch(contract.SignalResume, "Take issues again"),
		guide:      ch(contract.SignalGuide, "Standing guidance for every later issue's prompt (a JSON string)"),
		withdraw:   ch(contract.SignalWithdraw, "Withdraw standing guidance: its text, or its number from 1 (a JSON string)"),
		poke:       ch(contract.SignalPoke, "Look for ready issues now instead of at the next poll"),
		progress:   ch(contract.SignalSessionProgress, "An iteration of the current issue's session (sent by the session)"),
		pullEnded:  ch(contract.SignalPullEnded, "A followed pull request was merged or closed, or its follower gave up (sent by the follower)"),
		issueEvent: ch(contract.SignalIssueEvent, "A line of an issue's story (sent by its IssueWork workflow)"),
		issueEnded: ch(contract.SignalIssueEnded, "What became of an issue (sent by its IssueWork workflow)"),
	}
	workflow.Go(ctx, q.listen)
	return q, nil
}

// statusNow is the queue's status: its state st, and what this run
// shows beyond it.
func (q *queue) statusNow() contract.QueueStatus {
	st, c := q.status, q.st
	st.StartedAt, st.Totals, st.Recent, st.Guidance, st.Runs = c.StartedAt, c.Totals, c.Recent, c.Guidance, c.Runs
	st.Events, st.Skipped, st.Paused, st.StopRequested = c.Events, c.Skipped, c.Paused, c.Stop != ""
	st.Working, st.Waiting, st.Settings = c.Working, c.Waiting, q.in.Settings // limits set since the start
	s := q.in.Settings
	for _, n := range c.Following {
		id, ok := c.Sets[n]
		if !ok {
			id = contract.PullRequestID(contract.IssueSessionID(q.in.Session.Host, s.Repo.Owner, s.Repo.Name, n))
		}
		st.Followers = append(st.Followers, contract.Follower{Issue: n, WorkflowID: id})
	}
	return st
}

// listen applies signals as they arrive (see session.listen).
func (q *queue) listen(ctx workflow.Context) {
	for {
		err := workflow.Await(ctx, func() bool {
			return q.sig.stop.Len()+q.sig.pause.Len()+q.sig.resume.Len()+q.sig.guide.Len()+
				q.sig.withdraw.Len()+q.sig.poke.Len()+q.sig.progress.Len()+q.sig.pullEnded.Len()+
				q.sig.issueEvent.Len()+q.sig.issueEnded.Len() > 0
		})
		if err != nil {
			return
		}
		q.drain(ctx)
	}
}

// drain applies every signal that has arrived.
func (q *queue) drain(ctx workflow.Context) {
	for {
		got := false
		var stop contract.StopSignal
		for q.sig.stop.ReceiveAsync(&stop) {
			q.st.Stop = "stop requested"
			if stop.Reason != "" {
				q.st.Stop += ": " + stop.Reason
			}
			q.event(ctx, 0, q.st.Stop+"; the queue ends after the current issue")
			stop, got = contract.StopSignal{}, true
		}
		for q.sig.pause.ReceiveAsync(nil) {
			if !q.st.Paused {
				q.event(ctx, 0, "paused: no new issue until resumed")
			}
			q.st.Paused, got = true, true
		}
		for q.sig.resume.ReceiveAsync(nil) {
			if q.st.Paused {
				q.event(ctx, 0, "resumed")
			}
			q.st.Paused, got = false, true
		}
		var text string
		for q.sig.guide.ReceiveAsync(&text) {
			if len(text) > contract.MessageLimit {
				text = words.Cut(text, contract.MessageLimit-64) + " [clipped: the guidance was longer than 16 KiB]"
			}
			if text = strings.TrimSpace(text); text != "" {
				q.st.Guidance = append(q.st.Guidance, text)
				q.event(ctx, 0, fmt.Sprintf("guidance %d added for every later issue: %s", len(q.st.Guidance), words.Clip(text, 80)))
			}
			text, got = "", true
		}
		for q.sig.withdraw.ReceiveAsync(&text) {
			q.withdraw(ctx, text)
			text, got = "", true
		}
		for q.sig.poke.ReceiveAsync(nil) {
			q.st.Poke, got = true, true
		}
		var p contract.SessionProgress
		for q.sig.progress.ReceiveAsync(&p) {
			q.pending = append(q.pending, p)
			p, got = contract.SessionProgress{}, true
		}
		var end contract.PullEnd
		for q.sig.pullEnded.ReceiveAsync(&end) {
			q.pullEnded(ctx, end)
			end, got = contract.PullEnd{}, true
		}
		var ie contract.IssueEvent
		for q.sig.issueEvent.ReceiveAsync(&ie) {
			q.issueEvent(ctx, ie)
			ie, got = contract.IssueEvent{}, true
		}
		var ended contract.IssueEnded
		for q.sig.issueEnded.ReceiveAsync(&ended) {
			q.issueEnded(ctx, ended)
			ended, got = contract.IssueEnded{}, true
		}
		if !got {
			return
		}
	}
}

func (q *queue) withdraw(ctx workflow.Context, text string) {
	text = strings.TrimSpace(text)
	g := q.st.Guidance
	idx := -1
	if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(g) {
		idx = n - 1
	} else {
		for i, t := range g {
			if t == text {
				idx = i
			}
		}
	}
	if idx < 0 {
		q.logger.Warn("withdraw matched no guidance", "text", text)
		return
	}
	q.event(ctx, 0, "guidance withdrawn: "+words.Clip(g[idx], 80))
	q.st.Guidance = append(append([]string(nil), g[:idx]...), g[idx+1:]...)
}

// event adds a line to the queue's story.
func (q *queue) event(ctx workflow.Context, issue int, text string) {
	q.st.EventSeq++
	q.st.Events = append(q.st.Events, contract.QueueEvent{Seq: q.st.EventSeq, At: workflow.Now(ctx), Issue: issue, Text: text})
	if n := len(q.st.Events); n > queueEventLimit {
		q.st.Events = append([]contract.QueueEvent(nil), q.st.Events[n-queueEventLimit:]...)
	}
	q.logger.Info(text, "issue", issue)
}

func (q *queue) base() string {
	if b := q.in.Settings.BaseBranch; b != "" {
		return b
	}
	return q.st.Preflight.DefaultBranch
}

func (q *queue) run(ctx workflow.Context) (contract.QueueResult, error) {
	if q.st.Preflight.DefaultBranch == "" {
		q.setState(ctx, contract.StateStarting)
		err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, "preflight: token and repository"), contract.ActivityPreflight, q.in.Settings.Repo).Get(ctx, &q.st.Preflight)
		if err != nil {
			return q.fail(ctx, "preflight", err)
		}
		q.status.BaseBranch = q.base()
		q.event(ctx, 0, fmt.Sprintf("queue of %s started: issues labelled %q, PRs to %s", q.status.Repo, q.in.Settings.Label, q.base()))
	}
	for {
		q.drain(ctx)
		s := q.in.Settings
		if reason, msg := q.ending(); reason != "" {
			if len(q.st.Working) == 0 {
				return q.finish(ctx, reason, msg)
			}
			// The issues being worked on finish first.
			if err := q.awaitWorking(ctx, func() bool { return len(q.st.Working) == 0 }); err != nil {
				return q.cancelled(ctx, err)
			}
			continue
		}
		if q.ended > 0 {
			// A fresh run for each issue that ended.
			return q.continueAsNew(ctx)
		}
		if s.MaxCostPerDay > 0 && q.spentToday(ctx) >= s.MaxCostPerDay {
			if err := q.awaitTomorrow(ctx); err != nil {
				return q.cancelled(ctx, err)
			}
			continue
		}
		if q.st.Paused {
			q.setState(ctx, contract.StatePaused)
			if err := workflow.Await(ctx, func() bool { return !q.st.Paused || q.st.Stop != "" }); err != nil {
				return q.cancelled(ctx, err)
			}
			continue
		}
		if q.polls >= queuePollsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return q.continueAsNew(ctx)
		}
		if len(q.st.Working) >= s.Slots() {
			if err := q.awaitWorking(ctx, func() bool { return q.ended > 0 || q.st.Stop != "" }); err != nil {
				return q.cancelled(ctx, err)
			}
			continue
		}
		res, done, err := q.takeIssue(ctx)
		if done || err != nil {
			return res, err
		}
	}
}

// record adds an issue's outcome to the totals and the recent list.
func (q *queue) record(out contract.IssueOutcome) {
	// The queue keeps no patch: its carry-over stays small.
	out.Change, out.ChangeCut = "", false
	if out.Succeeded() {
		q.st.Totals.Done++
	} else {
		q.st.Totals.Failed++
	}
	q.st.Recent = append(q.st.Recent, out)
	if n := len(q.st.Recent); n > queueRecentLimit {
		q.st.Recent = append([]contract.IssueOutcome(nil), q.st.Recent[n-queueRecentLimit:]...)
	}
}

func (q *queue) continueAsNew(ctx workflow.Context) (contract.QueueResult, error) {
	q.drain(ctx)
	if q.st.Stop != "" {
		return q.finish(ctx, contract.ReasonStopped, q.st.Stop)
	}
	next := q.in
	next.CarryOver = &q.st
	return contract.QueueResult{}, workflow.NewContinueAsNewError(ctx, IssueQueue, next)
}

func (q *queue) finish(ctx workflow.Context, reason contract.Reason, msg string) (contract.QueueResult, error) {
	q.status.Reason, q.status.Message = reason, msg
	q.status.EndedAt = workflow.Now(ctx)
	q.event(ctx, 0, fmt.Sprintf("queue ended %s: %s", reason, msg))
	if reason == contract.ReasonStopped {
		q.setState(ctx, contract.StateStopped)
	} else {
		q.setState(ctx, contract.StateCompleted)
	}
	return contract.QueueResult{Reason: reason, Message: msg, Totals: q.st.Totals, Recent: q.st.Recent}, nil
}

func (q *queue) fail(ctx workflow.Context, step string, err error) (contract.QueueResult, error) {
	if temporal.IsCanceledError(err) {
		return q.cancelled(ctx, err)
	}
	msg := step + ": " + flow.RootMessage(err)
	q.status.Message = msg
	q.status.EndedAt = workflow.Now(ctx)
	q.event(ctx, 0, "queue failed: "+msg)
	q.setState(ctx, contract.StateFailed)
	return contract.QueueResult{}, temporal.NewNonRetryableApplicationError(msg, contract.ErrTypeQueueFailed, err)
}

func (q *queue) cancelled(ctx workflow.Context, err error) (contract.QueueResult, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	for _, c := range q.st.Working {
		// Cancelling the queue cancels its issues (their sessions kill
		// their agents), as it did when it worked on them itself.
		workflow.RequestCancelExternalWorkflow(dctx, c.WorkID(), "")
	}
	q.status.Reason = contract.ReasonCancelled
	q.status.EndedAt = workflow.Now(ctx)
	q.setState(dctx, contract.StateStopped)
	return contract.QueueResult{}, err
}

// hostOffline shows the queue waiting for its clone's host (off) or back
// to what it did before.
func (q *queue) hostOffline(ctx workflow.Context, off bool) {
	if off {
		q.beforeOffline = q.status.State
		q.event(ctx, 0, fmt.Sprintf("host %s is offline: waiting for its worker", q.in.Session.Host))
		q.setState(ctx, contract.StateHostOffline)
		return
	}
	q.event(ctx, 0, fmt.Sprintf("host %s is back", q.in.Session.Host))
	q.setState(ctx, q.beforeOffline)
}

func (q *queue) setState(ctx workflow.Context, st contract.State) {
	changed := q.status.State != st
	q.status.State = st
	if changed {
		if err := workflow.UpsertTypedSearchAttributes(ctx, flow.SearchStatus.
			ValueSet(string(st)), flow.SearchRepo.ValueSet(q.status.Repo)); err != nil {
			q.logger.Warn("upsert search attributes", "error", err)
		}
	}
	workflow.SetCurrentDetails(ctx, q.details())
}

func (q *queue) details() string {
	st := q.statusNow()
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**Ralph issue queue** of `%s`: **%s**", st.Repo, st.State))
	if st.Reason != "" {
		b.WriteString(fmt.Sprintf(" (%s)", st.Reason))
	}
	t := st.Totals
	b.WriteString(fmt.Sprintf("\n\nIssues labelled `%s` → PRs to `%s`. Done %d, failed %d, skipped %d; %d iterations, cost %.4f USD", st.Label, st.BaseBranch, t.Done, t.Failed, t.Skipped, t.Iterations, t.CostUSD))
	if c := st.Current; c != nil {
		b.WriteString(fmt.Sprintf("\n\n**Working on #%d** %s (%s), session `%s`", c.Number, c.Title, c.Phase, c.SessionID))
	}
	for _, c := range st.Working {
		if c.Workflow != "" {
			b.WriteString(fmt.Sprintf("\n\n**Working on #%d** %s (%s), workflow `%s`", c.Number, c.Title, c.Phase, c.Workflow))
			continue
		}
		b.WriteString(fmt.Sprintf("\n\n**Working on #%d** %s (%s), session `%s`", c.Number, c.Title, c.Phase, c.SessionID))
	}
	if st.State == contract.StateIdle && !st.NextPollAt.IsZero() {
		b.WriteString(fmt.Sprintf("\n\nIdle until %s; send the `%s` signal to look now.", st.NextPollAt.UTC().Format(time.RFC3339), contract.SignalPoke))
	}
	if len(st.Recent) > 0 {
		b.WriteString("\n\nRecent:")
		for _, o := range st.Recent {
			b.WriteString(fmt.Sprintf("\n- #%d %s: %s", o.Number, words.Clip(o.Title, 60), o.Reason))
			if o.PR != 0 {
				b.WriteString(fmt.Sprintf(", PR #%d", o.PR))
			}
		}
	}
	if len(st.Waiting) > 0 {
		b.WriteString("\n\nWaiting:" + waitingText(st.Waiting))
	}
	if len(st.Skipped) > 0 {
		b.WriteString("\n\nSkipped:")
		for _, s := range st.Skipped {
			b.WriteString(fmt.Sprintf("\n- #%d: %s", s.Number, s.Reason))
		}
	}
	return b.String()
}
