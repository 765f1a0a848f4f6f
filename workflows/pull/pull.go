// Package pull holds the PullRequest workflow: the follower of an issue's
// pull request, from opened to merged or closed, running a round (a child
// Session) for each failing check, review and moved base.
package pull

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
	"github.com/durable-ralph/ralph/workflows/notify"
	"github.com/durable-ralph/ralph/workflows/session"
)

// Bounds of a follower's run.
const (
	// pullReadsPerRun bounds the readings of one run: a pull request
	// that waits weeks for a review continues as new before its history
	// grows large.
	pullReadsPerRun = 200
	// computingRetry is how soon GitHub is read again while it computes
	// whether a pull request can be merged.
	computingRetry = 5 * time.Second
	// addressedLimit bounds the feedback keys a follower remembers: the
	// answered feedback of every review round (queue.max-review-rounds ×
	// github.MaxFeedback) and the comments it ignored. Beyond it the
	// oldest ignored comments would be listed (never answered) again.
	addressedLimit = 2000
	// eventLimit bounds the follower's story, and ignoredLimit the
	// comments it lists as ignored (the queue's bounds).
	eventLimit   = 50
	ignoredLimit = 20
)

// PullRequest follows an issue's pull request from opened to merged or
// closed. It reads the pull request (on a durable timer, or at once when
// poked), and when it needs work runs a round, a child Session on the
// issue's work tree with the round's task: failing checks with their
// output (at most queue.max-fix-rounds), reviews and comments of people
// with write access (at most queue.max-review-rounds, each comment
// answered once), a base that moved under a conflicting branch. After
// each round it pushes; after a review round it replies to each inline
// comment, writes one summary and asks the reviewers again. With
// queue.auto-merge it merges an approved, green pull request. While it
// waits no agent and no activity runs.
func PullRequest(ctx workflow.Context, in contract.FollowInput) (contract.FollowResult, error) {
	f, err := newFollower(ctx, in)
	if err != nil {
		return contract.FollowResult{}, err
	}
	return f.run(ctx)
}

// follower is one run of a pull request's follower; st is its state,
// carried whole by continue-as-new.
type follower struct {
	in     contract.FollowInput
	st     contract.FollowCarryOver
	status contract.FollowStatus
	logger log.Logger
	host   flow.Host
	stop   workflow.ReceiveChannel
	poke   workflow.ReceiveChannel
	// stopped is the reason of a stop request; poked a poke not yet
	// acted on.
	stopped string
	poked   bool
	reads   int
	notes   notify.Notifier
}

func newFollower(ctx workflow.Context, in contract.FollowInput) (*follower, error) {
	if in.Pull.Number == 0 || in.Repo.Owner == "" || in.Current.Worktree == "" {
		err := errors.New("invalid follow input: the pull request, repository and work tree are required")
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
	}
	f := &follower{in: in}
	if in.CarryOver != nil {
		f.st = *in.CarryOver
	}
	f.host = flow.Host{ID: in.Session.Host, Timeout: in.Session.HostTimeout}
	f.status = contract.FollowStatus{
		FollowID: workflow.GetInfo(ctx).WorkflowExecution.ID,
		Repo:     in.Repo.FullName(), Issue: in.Issue.Number, Pull: in.Pull.Number, PullURL: in.Pull.URL,
	}
	f.logger = log.With(workflow.GetLogger(ctx), "pull", in.Pull.Number)
	f.notes = notify.Notifier{Session: fmt.Sprintf("%s#%d", in.Repo.FullName(), in.Issue.Number), Logger: f.logger}
	if err := workflow.SetQueryHandlerWithOptions(ctx, contract.QueryStatus, func() (contract.FollowStatus, error) {
		st := f.status
		st.FollowCarryOver = f.st
		return st, nil
	}, workflow.QueryHandlerOptions{Description: "What the pull request's follower waits for, its rounds and its story"}); err != nil {
		return nil, fmt.Errorf("register %s query: %w", contract.QueryStatus, err)
	}
	f.stop = workflow.GetSignalChannelWithOptions(ctx, contract.SignalStop, workflow.SignalChannelOptions{
		Description: "Stop following the pull request (a round that runs is cancelled)"})
	f.poke = workflow.GetSignalChannelWithOptions(ctx, contract.SignalGitHubPoke, workflow.SignalChannelOptions{
		Description: "Read the pull request now: GitHub says something changed"})
	return f, nil
}

// drain takes the signals that arrived.
func (f *follower) drain(ctx workflow.Context) {
	var s contract.StopSignal
	for f.stop.ReceiveAsync(&s) {
		f.stopped = "stop requested"
		if s.Reason != "" {
			f.stopped += ": " + s.Reason
		}
		f.event(ctx, f.stopped)
		s = contract.StopSignal{}
	}
	for f.poke.ReceiveAsync(nil) {
		f.poked = true
	}
}

func (f *follower) run(ctx workflow.Context) (contract.FollowResult, error) {
	if f.st.EventSeq == 0 {
		f.event(ctx, fmt.Sprintf("following pull request #%d of #%d: %s", f.in.Pull.Number, f.in.Issue.Number, f.in.Pull.URL))
	}
	for {
		f.drain(ctx)
		if f.stopped != "" {
			return f.end(ctx, contract.ReasonStopped, f.stopped)
		}
		if f.reads >= pullReadsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			next := f.in
			next.CarryOver = &f.st
			return contract.FollowResult{}, workflow.NewContinueAsNewError(ctx, PullRequest, next)
		}
		f.reads++
		f.poked = false
		pr, err := f.read(ctx)
		if err != nil {
			if flow.IsPermanent(err) {
				return f.end(ctx, contract.ReasonFailed, "read the pull request: "+flow.RootMessage(err))
			}
			f.event(ctx, "could not read the pull request: "+flow.RootMessage(err))
			if err := f.wait(ctx, f.in.PollInterval, "GitHub to answer"); err != nil {
				return f.cancelled(ctx, err)
			}
			continue
		}
		res, done, err := f.step(ctx, pr)
		if err != nil {
			return f.cancelled(ctx, err)
		}
		if done {
			return res, nil
		}
	}
}

// read is one reading of the pull request; what others said is noted
// once and never read again.
func (f *follower) read(ctx workflow.Context) (contract.PullState, error) {
	var pr contract.PullState
	err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("read pull request #%d", f.in.Pull.Number)), contract.ActivityPullState,
		contract.PullStateInput{Repo: f.in.Repo, Number: f.in.Pull.Number, Addressed: f.st.Addressed,
			TrustedBots: f.in.Settings.TrustedBots, Self: f.in.Self}).Get(ctx, &pr)
	if err != nil {
		return pr, err
	}
	f.st.Requests += pr.Requests
	for _, ig := range pr.Ignored {
		f.event(ctx, fmt.Sprintf("ignored %s %d by @%s: %s", contract.FeedbackNoun(ig.Kind), ig.ID, ig.Author, ig.Why))
		f.st.Ignored = flow.AppendBounded(f.st.Ignored, ig, ignoredLimit)
		f.address(contract.FeedbackKey(ig.Kind, ig.ID))
	}
	f.status.Head = pr.Head
	if pr.State == "open" {
		// A closed pull request is read no further than its state.
		f.status.Checks = pr.Checks
	}
	if pr.Head != f.st.ChecksHead {
		f.st.ChecksHead, f.st.ChecksSince = pr.Head, workflow.Now(ctx)
	}
	return pr, nil
}

// step does what the pull request needs now: end, a round, a merge or a
// wait. done says the follower ended with res.
func (f *follower) step(ctx workflow.Context, pr contract.PullState) (res contract.FollowResult, done bool, err error) {
	s := f.in.Settings
	switch {
	case pr.Merged:
		f.labels(ctx, contract.LabelMerged, contract.LabelPROpen, contract.LabelQuestion)
		res, err = f.end(ctx, contract.ReasonMerged, "merged by @"+pr.MergedBy)
		return res, true, err
	case pr.State == "closed":
		f.labels(ctx, "", contract.LabelPROpen, contract.LabelQuestion)
		res, err = f.end(ctx, contract.ReasonClosed, "closed without a merge")
		return res, true, err
	case pr.Mergeable == nil && pr.MergeableState != "draft":
		return res, false, f.wait(ctx, computingRetry, "GitHub to compute whether the pull request can be merged")
	case pr.Mergeable != nil && !*pr.Mergeable || pr.MergeableState == "dirty":
		if f.st.UpdateRounds >= max(s.MaxFixRounds, 1) {
			return f.giveUp(ctx, fmt.Sprintf("the branch still conflicts with `%s` after %d rounds that brought it in", f.in.Base, f.st.UpdateRounds))
		}
		f.st.UpdateRounds++
		return res, false, f.round(ctx, contract.StateUpdatingBranch, updateTask(f.in.Base), f.updateStrategy(), nil)
	case len(pr.Checks.Failed) > 0 && pr.Checks.Done():
		if f.st.FixRounds >= s.MaxFixRounds {
			return f.giveUp(ctx, fmt.Sprintf("checks still fail after %d rounds: %s", f.st.FixRounds, checkNames(pr.Checks.Failed)))
		}
		f.st.FixRounds++
		return res, false, f.round(ctx, contract.StateFixingCI, checksTask(pr.Checks), "", nil)
	case len(pr.Feedback) > 0 && f.st.ReviewRounds < s.MaxReviewRounds:
		f.st.ReviewRounds++
		return res, false, f.round(ctx, contract.StateAddressingReview, reviewTask(pr.Feedback), "", pr.Feedback)
	case len(pr.Feedback) > 0:
		f.comment(ctx, contract.RoundMarker(f.in.Issue.Number, 0), fmt.Sprintf(
			"Durable Ralph answered %d review rounds, the limit (`queue.max-review-rounds`): a person takes it from here.", f.st.ReviewRounds))
		for _, fb := range pr.Feedback {
			f.address(contract.FeedbackKey(fb.Kind, fb.ID))
		}
		return res, false, nil
	case pr.Checks.Total == 0 && workflow.Now(ctx).Sub(f.st.ChecksSince) < flow.NoChecksGrace:
		// GitHub creates a head's check runs a moment after the push: a
		// head without any is not green yet.
		return res, false, f.wait(ctx, min(f.in.PollInterval, flow.NoChecksGrace), "checks to appear")
	case !pr.Checks.Done():
		if timeout := s.ChecksTimeout; timeout > 0 && workflow.Now(ctx).Sub(f.st.ChecksSince) >= timeout {
			return f.giveUp(ctx, fmt.Sprintf("checks did not finish within %s: %s", timeout, strings.Join(pr.Checks.Pending, ", ")))
		}
		return res, false, f.wait(ctx, f.in.PollInterval, "checks: "+strings.Join(pr.Checks.Pending, ", "))
	case s.AutoMerge && pr.MergeableState == "clean" && !pr.ChangesRequested:
		return f.merge(ctx, pr)
	case pr.Approved:
		return res, false, f.wait(ctx, f.in.PollInterval, "a merge")
	}
	return res, false, f.wait(ctx, f.in.PollInterval, "a review")
}

// waiting names the state of a wait for what.
func waiting(what string) contract.State {
	switch {
	case strings.HasPrefix(what, "checks"):
		return contract.StateWaitingForChecks
	case what == "a merge":
		return contract.StateWaitingForMerge
	}
	return contract.StateWaitingForReview
}

// wait sleeps on a durable timer for d, or until poked or stopped.
func (f *follower) wait(ctx workflow.Context, d time.Duration, what string) error {
	f.setState(ctx, waiting(what), "waiting for "+what)
	_, err := workflow.AwaitWithTimeout(ctx, d, func() bool {
		return f.stop.Len() > 0 || f.poke.Len() > 0 || f.poked
	})
	return err
}

// round runs one round of kind with task: the work tree prepared, a
// session on it, the branch pushed; after a review round, the replies,
// the summary and the review requests.
func (f *follower) round(ctx workflow.Context, kind contract.State, task, update string, feedback []contract.Feedback) error {
	f.st.Rounds++
	n := f.st.Rounds
	f.setState(ctx, kind, fmt.Sprintf("round %d", n))
	f.event(ctx, fmt.Sprintf("round %d (%s): %s", n, kind, words.Clip(words.OneLine(task), 100)))
	cur := f.in.Current
	var prep contract.RoundPrepared
	if err := f.host.Execute(ctx, flow.GitOptions(fmt.Sprintf("prepare round %d of #%d", n, f.in.Issue.Number)), &prep, contract.ActivityPrepareRound, contract.RoundInput{
		Clone: f.in.Clone, Worktree: cur.Worktree, Branch: cur.Branch, BaseRef: f.in.BaseRef, Task: task,
		Update: update, LastPushed: f.st.LastPushed, TokenEnv: f.in.Repo.TokenEnv,
	}); err != nil {
		return f.roundFailed(ctx, n, "prepare the work tree", err)
	}
	if prep.Pulled > 0 {
		f.event(ctx, fmt.Sprintf("round %d builds on %s pushed to the branch by someone else", n, words.Count(prep.Pulled, "commit")))
	}
	if len(prep.Conflicts) > 0 {
		f.event(ctx, fmt.Sprintf("round %d resolves conflicts in %s", n, strings.Join(prep.Conflicts, ", ")))
	}
	res, err := f.roundSession(ctx, n)
	f.st.CostUSD += res.Totals.CostUSD
	f.st.Iterations += res.Iterations
	if err != nil || res.Reason != contract.ReasonComplete {
		if err == nil {
			err = fmt.Errorf("the session ended %s: %s", res.Reason, res.Message)
		}
		return f.roundFailed(ctx, n, "session", err)
	}
	lease := ""
	if prep.Rebased {
		lease = prep.Remote
	}
	var push contract.PushResult
	if err := f.host.Execute(ctx, flow.GitOptions("push "+cur.Branch), &push, contract.ActivityPushBranch, contract.PushInput{
		Clone: f.in.Clone, Branch: cur.Branch, BaseRef: f.in.BaseRef, TokenEnv: f.in.Repo.TokenEnv, Lease: lease,
	}); err != nil {
		return f.roundFailed(ctx, n, "push", err)
	}
	f.st.LastPushed = push.Head
	f.event(ctx, fmt.Sprintf("round %d pushed %s at %s (%s, %s)", n, cur.Branch, contract.ShortSHA(push.Head), words.Count(res.Iterations, "iteration"), words.Dollars(res.Totals.CostUSD)))
	if kind == contract.StateAddressingReview {
		f.answer(ctx, n, push.Head, feedback)
	}
	return nil
}

// roundSession runs round n's session on the work tree and returns its
// result.
func (f *follower) roundSession(ctx workflow.Context, n int) (contract.SessionResult, error) {
	in := f.in.Session
	in.CarryOver = nil
	in.NotifyParent = false
	id := contract.RoundSessionID(f.in.Current.SessionID, n)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		TypedSearchAttributes: temporal.NewSearchAttributes(flow.SearchRepo.ValueSet(f.in.Repo.FullName()), flow.SearchIssue.ValueSet(int64(f.in.Issue.Number))),
		StaticSummary:         fmt.Sprintf("#%d round %d", f.in.Issue.Number, n),
	})
	var res contract.SessionResult
	err := workflow.ExecuteChildWorkflow(cctx, session.Session, in).Get(ctx, &res)
	return res, err
}

// roundFailed reports round n's failure at step on the issue and ends
// nothing: the follower reads the pull request again, and a round whose
// limit is spent gives up there.
func (f *follower) roundFailed(ctx workflow.Context, n int, step string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	f.event(ctx, fmt.Sprintf("round %d failed at %s: %s", n, step, flow.RootMessage(err)))
	f.comment(ctx, contract.RoundMarker(f.in.Issue.Number, n), fmt.Sprintf("Round %d did not finish: %s failed (%s).", n, step, words.Clip(flow.RootMessage(err), 300)))
	return nil
}

// answer replies once to each inline comment round n addressed, writes
// the round's summary and asks the reviewers again.
func (f *follower) answer(ctx workflow.Context, n int, head string, feedback []contract.Feedback) {
	var reviewers []string
	var b strings.Builder
	b.WriteString(fmt.Sprintf("Round %d addressed %d review comments in %s:\n\n", n, len(feedback), head))
	for _, fb := range feedback {
		f.address(contract.FeedbackKey(fb.Kind, fb.ID))
		b.WriteString(fmt.Sprintf("- @%s (%s): %s\n", fb.Author, contract.FeedbackNoun(fb.Kind), words.Clip(words.OneLine(fb.Body), 100)))
		if !slices.Contains(reviewers, fb.Author) && !strings.HasSuffix(fb.Author, "[bot]") {
			reviewers = append(reviewers, fb.Author)
		}
		if fb.Kind != contract.FeedbackInline {
			continue
		}
		err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("reply to comment %d", fb.ID)), contract.ActivityReplyToComment,
			contract.ReplyInput{Repo: f.in.Repo, Pull: f.in.Pull.Number, CommentID: fb.ID, Body: "Addressed in " + head + "."}).Get(ctx, nil)
		if err != nil {
			f.event(ctx, fmt.Sprintf("could not reply to comment %d: %s", fb.ID, flow.RootMessage(err)))
		}
	}
	f.comment(ctx, contract.RoundMarker(f.in.Issue.Number, n), b.String())
	slices.Sort(reviewers)
	if len(reviewers) == 0 {
		return
	}
	err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, "ask for a review again"), contract.ActivityRequestReviewers,
		contract.ReviewersInput{Repo: f.in.Repo, Pull: f.in.Pull.Number, Reviewers: reviewers}).Get(ctx, nil)
	if err != nil {
		f.event(ctx, "could not ask for a review again: "+flow.RootMessage(err))
	}
}

// merge merges the pull request at the head it read.
func (f *follower) merge(ctx workflow.Context, pr contract.PullState) (contract.FollowResult, bool, error) {
	f.setState(ctx, contract.StateMerging, "merging")
	var m contract.MergeResult
	err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("merge pull request #%d", f.in.Pull.Number)), contract.ActivityMergePull, contract.MergeInput{
		Repo: f.in.Repo, Pull: f.in.Pull.Number, Head: pr.Head, Method: f.in.Settings.MergeMethod,
		Title: fmt.Sprintf("%s (#%d)", f.in.Issue.Title, f.in.Pull.Number),
	}).Get(ctx, &m)
	switch {
	case err != nil:
		f.event(ctx, "could not merge: "+flow.RootMessage(err))
	case m.Merged:
		f.event(ctx, fmt.Sprintf("merged pull request #%d (%s) at %s", f.in.Pull.Number, f.in.Settings.MergeMethod, contract.ShortSHA(m.SHA)))
		// The next reading sees it merged and ends.
		f.poked = true
		return contract.FollowResult{}, false, nil
	default:
		f.event(ctx, "GitHub refused the merge: "+m.Refused)
	}
	return contract.FollowResult{}, false, f.wait(ctx, f.in.PollInterval, "a merge")
}

// giveUp ends the follower failed: the issue says why and gets the
// failed label.
func (f *follower) giveUp(ctx workflow.Context, why string) (contract.FollowResult, bool, error) {
	f.comment(ctx, contract.RoundMarker(f.in.Issue.Number, 0), "Durable Ralph stopped following this pull request: "+why+". A person takes it from here.")
	f.labels(ctx, contract.LabelFailed, contract.LabelPROpen)
	res, err := f.end(ctx, contract.ReasonFailed, why)
	return res, true, err
}

// end ends the follower with reason and tells the queue.
func (f *follower) end(ctx workflow.Context, reason contract.Reason, msg string) (contract.FollowResult, error) {
	res := contract.FollowResult{Reason: reason, Message: msg, FixRounds: f.st.FixRounds, ReviewRounds: f.st.ReviewRounds,
		UpdateRounds: f.st.UpdateRounds, CostUSD: f.st.CostUSD, Iterations: f.st.Iterations}
	f.status.Reason, f.status.Message = reason, msg
	f.event(ctx, fmt.Sprintf("pull request #%d: %s (%s)", f.in.Pull.Number, reason, msg))
	f.setState(ctx, contract.StateFollowingFinished, "")
	f.notes.SendNote(ctx, contract.Notification{Event: contract.NotifyPR, URL: f.in.Pull.URL,
		Text:    fmt.Sprintf("pull request #%d %s: %s", f.in.Pull.Number, reason, msg),
		Details: []string{fmt.Sprintf("rounds: %d fix, %d review, %d update; %.4f USD", res.FixRounds, res.ReviewRounds, res.UpdateRounds, res.CostUSD)},
	}, nil)
	if f.in.QueueID != "" {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		err := workflow.SignalExternalWorkflow(dctx, f.in.QueueID, "", contract.SignalPullEnded,
			contract.PullEnd{Repo: f.in.Repo, Issue: f.in.Issue.Number, Result: res}).Get(dctx, nil)
		if err != nil {
			f.logger.Warn("tell the queue the pull request ended", "error", err)
		}
	}
	return res, nil
}

func (f *follower) cancelled(ctx workflow.Context, err error) (contract.FollowResult, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	f.status.Reason = contract.ReasonCancelled
	f.setState(dctx, contract.StateStopped, "")
	return contract.FollowResult{}, err
}

// labels adds add (when not empty) to the issue and removes remove.
func (f *follower) labels(ctx workflow.Context, add string, remove ...string) {
	in := contract.LabelsInput{Repo: f.in.Repo, Number: f.in.Issue.Number, Remove: remove}
	if add != "" {
		in.Add = []string{add}
	}
	if err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("labels of #%d", f.in.Issue.Number)), contract.ActivitySetLabels, in).Get(ctx, nil); err != nil {
		f.event(ctx, "could not set the labels: "+flow.RootMessage(err))
	}
}

// comment writes the issue's comment that carries marker, once.
func (f *follower) comment(ctx workflow.Context, marker, body string) {
	err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, "comment on #"+fmt.Sprint(f.in.Issue.Number)), contract.ActivityComment,
		contract.CommentInput{Repo: f.in.Repo, Number: f.in.Issue.Number, Body: body, Marker: marker, Self: f.in.Self}).Get(ctx, nil)
	if err != nil {
		f.event(ctx, "could not comment: "+flow.RootMessage(err))
	}
}

// address remembers that the feedback of key was answered or ignored.
func (f *follower) address(key string) {
	if !slices.Contains(f.st.Addressed, key) {
		f.st.Addressed = flow.AppendBounded(f.st.Addressed, key, addressedLimit)
	}
}

func (f *follower) event(ctx workflow.Context, text string) {
	f.st.EventSeq++
	f.st.Events = flow.AppendBounded(f.st.Events, contract.QueueEvent{Seq: f.st.EventSeq, At: workflow.Now(ctx), Issue: f.in.Issue.Number, Text: text}, eventLimit)
	f.logger.Info(text)
}

func (f *follower) setState(ctx workflow.Context, st contract.State, waiting string) {
	changed := f.status.State != st
	f.status.State, f.status.Waiting = st, waiting
	if changed {
		if err := workflow.UpsertTypedSearchAttributes(ctx, flow.SearchStatus.ValueSet(string(st))); err != nil {
			f.logger.Warn("upsert search attributes", "error", err)
		}
	}
	if waiting != "" {
		waiting = " (" + waiting + ")"
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**Pull request #%d** of #%d %s: **%s**%s\n\nRounds: %d fix, %d review, %d update; %.4f USD.",
		f.in.Pull.Number, f.in.Issue.Number, f.in.Pull.URL, st, waiting, f.st.FixRounds, f.st.ReviewRounds, f.st.UpdateRounds, f.st.CostUSD))
}

func (f *follower) updateStrategy() string {
	if f.in.Settings.UpdateStrategy == contract.UpdateByRebase {
		return contract.UpdateByRebase
	}
	return contract.UpdateByMerge
}

func checkNames(failed []contract.FailedCheck) string {
	var names []string
	for _, c := range failed {
		names = append(names, c.Name+" ("+c.Conclusion+")")
	}
	return strings.Join(names, ", ")
}
