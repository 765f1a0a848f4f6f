// Package changeset holds the ChangeSet workflow: one change across
// several repositories, run as a saga. Each member (a repository) is an
// issue of its own worked on by an IssueWork, with its pull request and
// follower, started once the members it comes after have their pull
// requests open and told what they changed; the pull requests link each
// other; the set merges them in its order, all or none, and when a
// member fails for good it closes the others with a comment saying why.
package changeset

import (
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
	"github.com/durable-ralph/ralph/workflows/issue"
)

// defaultPollInterval is how often a set whose pull requests are all
// open reads them, unless its input says.
const defaultPollInterval = time.Minute

// storyLimit bounds the lines of the story the status keeps.
const storyLimit = 200

// ChangeSet runs the change set in: first the preflight of every
// member's repository (a token that cannot write one refuses the set
// before anything starts, naming it: the workflow fails), then the
// members in order, then the merge. It returns the set's last status,
// whose state says how it ended (merged, failed, abandoned, half merged).
func ChangeSet(ctx workflow.Context, in contract.ChangeSetInput) (contract.ChangeSetStatus, error) {
	if err := validate(in); err != nil {
		return contract.ChangeSetStatus{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
	}
	s, err := newSet(ctx, in)
	if err != nil {
		return contract.ChangeSetStatus{}, err
	}
	if in.CarryOver == nil {
		if in.Origin != nil {
			if err := s.takeOrigin(ctx); err != nil {
				s.end(ctx, contract.SetFailed, err.Error())
				return s.st, nil
			}
		}
		if err := s.preflight(ctx); err != nil {
			s.end(ctx, contract.SetFailed, err.Error())
			return s.st, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeGitHubPreflight, nil)
		}
	}
	if next := s.run(ctx); next != nil {
		return contract.ChangeSetStatus{}, workflow.NewContinueAsNewError(ctx, ChangeSet, *next)
	}
	if ctx.Err() != nil {
		return s.st, ctx.Err()
	}
	// As a session's, the set's end is its result, merged or not: its
	// state says which.
	return s.st, nil
}

// validate checks the input beyond the spec: a member's settings for
// each member, for its repository.
func validate(in contract.ChangeSetInput) error {
	if err := in.Spec.Validate(); err != nil {
		return err
	}
	if len(in.Members) != len(in.Spec.Members) {
		return fmt.Errorf("change set %s: %d members' settings for %d repositories", in.Spec.Name, len(in.Members), len(in.Spec.Members))
	}
	for i, m := range in.Members {
		if !strings.EqualFold(m.Settings.Repo.FullName(), in.Spec.Members[i].Repo) {
			return fmt.Errorf("repos[%d]: settings of %s for %s", i, m.Settings.Repo.FullName(), in.Spec.Members[i].Repo)
		}
	}
	return nil
}

// set is a ChangeSet run.
type set struct {
	in     contract.ChangeSetInput
	st     contract.ChangeSetStatus
	logger log.Logger
	// pre is what each member's preflight found: its default branch,
	// and the login its repository is written as.
	pre []contract.PreflightResult
	// links is the text of the link comment last written on each
	// member's pull request, and opened when it was seen open.
	links  []string
	opened []time.Time
	// mergeAsked: a person said merge.
	mergeAsked bool
	// originText is the comment last written on the issue the set came
	// from (Origin); freed says its queue was told that the issue's work
	// is done (every pull request open), when the set had cost freedCost.
	originText string
	freed      bool
	freedCost  float64
	// shown is the state and cost the search attributes show.
	shown struct {
		state string
		cost  float64
	}
	sig struct {
		issueEvent, issueEnded, pullEnded, merge, abandon workflow.ReceiveChannel
	}
}

func newSet(ctx workflow.Context, in contract.ChangeSetInput) (*set, error) {
	n := len(in.Members)
	s := &set{in: in, pre: make([]contract.PreflightResult, n), links: make([]string, n), opened: make([]time.Time, n)}
	s.logger = log.With(workflow.GetLogger(ctx), "changeset", in.Spec.Name)
	s.st = contract.ChangeSetStatus{Name: in.Spec.Name, State: contract.SetWorking, Started: workflow.Now(ctx), Updated: workflow.Now(ctx)}
	if o := in.Origin; o != nil {
		s.st.Origin = fmt.Sprintf("%s#%d", o.Repo.FullName(), o.Issue.Number)
	}
	for _, i := range in.Spec.Order() {
		s.st.Order = append(s.st.Order, in.Spec.Members[i].Repo)
	}
	for _, m := range in.Spec.Members {
		s.st.Members = append(s.st.Members, contract.ChangeSetMemberStatus{Repo: m.Repo, State: contract.MemberWaiting, After: m.After})
	}
	if err := workflow.SetQueryHandlerWithOptions(ctx, contract.QueryStatus, func() (contract.ChangeSetStatus, error) { return s.st, nil },
		workflow.QueryHandlerOptions{Description: "The change set: its state, each repository's issue, pull request and checks, and its story"}); err != nil {
		return nil, fmt.Errorf("register %s query: %w", contract.QueryStatus, err)
	}
	ch := func(name, desc string) workflow.ReceiveChannel {
		return workflow.GetSignalChannelWithOptions(ctx, name, workflow.SignalChannelOptions{Description: desc})
	}
	s.sig.issueEvent = ch(contract.SignalIssueEvent, "A line of a member's story (sent by its issue work)")
	s.sig.issueEnded = ch(contract.SignalIssueEnded, "What became of a member's issue (sent by its issue work)")
	s.sig.pullEnded = ch(contract.SignalPullEnded, "The end of a member's pull request (sent by its follower)")
	s.sig.merge = ch(contract.SignalChangeSetMerge, "Merge the set, in its order, once every pull request is green and approved")
	s.sig.abandon = ch(contract.SignalChangeSetAbandon, "Abandon the set: close every pull request, with a comment saying so (the text, optional, says why)")
	if c := in.CarryOver; c != nil {
		s.st, s.pre, s.links, s.opened, s.mergeAsked = c.Status, c.Preflight, c.Links, c.Opened, c.MergeAsked
		s.originText, s.freed, s.freedCost = c.OriginText, c.Freed, c.FreedCost
		s.in.CarryOver = nil
	}
	return s, nil
}

// readsPerRun bounds the readings of the pull requests in one run: a set
// that waits weeks for reviews continues as new before its history
// grows large.
const readsPerRun = 200

// next is the input of the run that continues this one.
func (s *set) next() *contract.ChangeSetInput {
	next := s.in
	next.CarryOver = &contract.ChangeSetCarryOver{Status: s.st, Preflight: s.pre, Links: s.links, Opened: s.opened, MergeAsked: s.mergeAsked,
		OriginText: s.originText, Freed: s.freed, FreedCost: s.freedCost}
	return &next
}

// event adds a line to the set's story, and shows its state and cost in
// its search attributes (the Temporal UI, starter list) when they
// changed.
func (s *set) event(ctx workflow.Context, text string) {
	s.logger.Info(text)
	s.st.Story = flow.AppendBounded(s.st.Story, workflow.Now(ctx).UTC().Format("15:04:05")+" "+text, storyLimit)
	s.st.Updated = workflow.Now(ctx)
	if s.st.State == s.shown.state && s.st.CostUSD == s.shown.cost {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, flow.SearchStatus.ValueSet(s.st.State), flow.SearchCostUSD.ValueSet(s.st.CostUSD)); err != nil {
		s.logger.Warn("could not show the set's state", "error", err)
		return
	}
	s.shown.state, s.shown.cost = s.st.State, s.st.CostUSD
}

// preflight checks every member's repository at once: the token can read
// and push it and write its issues. The first refusal, in the set's
// order, is the error, naming the repository.
func (s *set) preflight(ctx workflow.Context) error {
	futures := make([]workflow.Future, len(s.in.Members))
	for i, m := range s.in.Members {
		futures[i] = workflow.ExecuteActivity(flow.GitHubOptions(ctx, "preflight: "+m.Settings.Repo.FullName()), contract.ActivityPreflight, m.Settings.Repo)
	}
	for i, f := range futures {
		var res contract.PreflightResult
		if err := f.Get(ctx, &res); err != nil {
			return fmt.Errorf("repos[%d] %s: %s", i, s.in.Spec.Members[i].Repo, flow.RootMessage(err))
		}
		s.pre[i] = res
		s.in.Members[i].Settings.Repo.Owner, s.in.Members[i].Settings.Repo.Name = splitRepo(res.FullName, s.in.Members[i].Settings.Repo)
	}
	s.event(ctx, fmt.Sprintf("preflight: the token can work on %s", strings.Join(s.st.Order, ", ")))
	return nil
}

// splitRepo is the owner and name of full (as GitHub spells them), or
// repo's when full is empty.
func splitRepo(full string, repo contract.Repo) (string, string) {
	if owner, name, ok := strings.Cut(full, "/"); ok {
		return owner, name
	}
	return repo.Owner, repo.Name
}

// run starts members as their predecessors' pull requests open, takes
// what they say, and merges once every pull request is ready, until the
// set ends; or it returns the input of the run that continues it, when
// this one has read its pull requests often enough.
func (s *set) run(ctx workflow.Context) *contract.ChangeSetInput {
	poll := s.in.PollInterval
	if poll <= 0 {
		poll = defaultPollInterval
	}
	for reads := 0; !s.over(); {
		s.startReady(ctx)
		if s.over() {
			return nil
		}
		if !s.allOpen() {
			if err := workflow.Await(ctx, s.signalled); err != nil {
				return nil
			}
			s.drain(ctx)
			if !s.over() && workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
				// The members' stories came as signals: a long session's
				// many lines grow the history as the readings do.
				return s.next()
			}
			continue
		}
		s.freeOrigin(ctx)
		if reads >= readsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			s.drain(ctx)
			if !s.over() {
				return s.next()
			}
			return nil
		}
		reads++
		if s.allMerged() {
			s.end(ctx, contract.SetMerged, "every pull request was merged (by people)")
			return nil
		}
		s.st.State = contract.SetReady
		if s.readPulls(ctx) && (s.in.AutoMerge || s.mergeAsked) {
			// A merge GitHub refused with nothing merged waits for the
			// next reading, as one that is not ready does.
			if s.merge(ctx); s.over() {
				return nil
			}
		}
		s.writeLinks(ctx)
		if _, err := workflow.AwaitWithTimeout(ctx, poll, s.signalled); err != nil {
			return nil
		}
		s.drain(ctx)
	}
	return nil
}

// over says the set ended.
func (s *set) over() bool {
	switch s.st.State {
	case contract.SetMerged, contract.SetFailed, contract.SetAbandoned, contract.SetHalfMerged:
		return true
	}
	return false
}

// allMerged says every member's pull request is merged.
func (s *set) allMerged() bool {
	for _, m := range s.st.Members {
		if m.State != contract.MemberMerged {
			return false
		}
	}
	return true
}

// signalled says a signal waits.
func (s *set) signalled() bool {
	for _, c := range []workflow.ReceiveChannel{s.sig.issueEvent, s.sig.issueEnded, s.sig.pullEnded, s.sig.merge, s.sig.abandon} {
		if c.Len() > 0 {
			return true
		}
	}
	return false
}

// allOpen says every member's pull request is open or merged (a person
// may merge one before the set does).
func (s *set) allOpen() bool {
	for _, m := range s.st.Members {
		if m.State != contract.MemberOpen && m.State != contract.MemberMerged {
			return false
		}
	}
	return true
}

// drain takes every signal that waits.
func (s *set) drain(ctx workflow.Context) {
	var ev contract.IssueEvent
	for s.sig.issueEvent.ReceiveAsync(&ev) {
		if i := s.memberOfSession(ev.Current.SessionID); i >= 0 && ev.Text != "" {
			s.event(ctx, s.st.Members[i].Repo+": "+ev.Text)
		}
		ev = contract.IssueEvent{}
	}
	var ended contract.IssueEnded
	for s.sig.issueEnded.ReceiveAsync(&ended) {
		s.issueEnded(ctx, ended)
		ended = contract.IssueEnded{}
	}
	var end contract.PullEnd
	for s.sig.pullEnded.ReceiveAsync(&end) {
		s.pullEnded(ctx, end)
		end = contract.PullEnd{}
	}
	for s.sig.merge.ReceiveAsync(nil) {
		if !s.mergeAsked && !s.over() {
			s.event(ctx, "merge asked for: the set merges once every pull request is green and approved")
		}
		s.mergeAsked = true
	}
	var why string
	if s.sig.abandon.ReceiveAsync(&why) && !s.over() {
		if why = strings.TrimSpace(why); why == "" {
			why = "a person abandoned it"
		}
		s.compensate(ctx, contract.SetAbandoned, "abandoned: "+words.Clip(why, 300))
	}
}

// memberOfSession is the member whose issue's session is id, or -1.
func (s *set) memberOfSession(id string) int {
	for i, m := range s.st.Members {
		if m.Issue != 0 && id == s.sessionID(i, m.Issue) {
			return i
		}
	}
	return -1
}

// sessionID is the session ID of member i's issue n.
func (s *set) sessionID(i, n int) string {
	r := s.in.Members[i].Settings.Repo
	return contract.IssueSessionID(s.in.Members[i].Session.Host, r.Owner, r.Name, n)
}

// issueEnded takes what became of a member's issue: its pull request
// open (the members after it may start), or a failure, which fails the
// set.
func (s *set) issueEnded(ctx workflow.Context, ended contract.IssueEnded) {
	i := s.memberOfSession(ended.Outcome.SessionID)
	if i < 0 || s.over() {
		return
	}
	o := ended.Outcome
	m := &s.st.Members[i]
	m.CostUSD += o.CostUSD
	s.st.CostUSD += o.CostUSD
	if !o.Succeeded() {
		m.State, m.Message = contract.MemberFailed, failureText(o)
		s.compensate(ctx, contract.SetFailed, fmt.Sprintf("%s failed: %s", m.Repo, m.Message))
		return
	}
	m.State, m.Pull, m.PullURL = contract.MemberOpen, o.PR, o.PRURL
	s.opened[i] = workflow.Now(ctx)
	m.Branch, m.Head, m.Log, m.Change, m.ChangeCut = contract.IssueBranch(o.Number), o.Head, o.Log, o.Change, o.ChangeCut
	s.event(ctx, fmt.Sprintf("%s: pull request #%d is open (%s at %s)", m.Repo, o.PR, m.Branch, contract.ShortSHA(o.Head)))
	s.writeLinks(ctx)
}

// failureText says how an issue ended without a pull request.
func failureText(o contract.IssueOutcome) string {
	if o.Message != "" {
		return fmt.Sprintf("%s (%s)", o.Reason, o.Message)
	}
	return string(o.Reason)
}

// pullEnded takes the end of a member's pull request: merged, or closed
// or given up by its follower, which fails the set.
func (s *set) pullEnded(ctx workflow.Context, end contract.PullEnd) {
	i := -1
	for j, m := range s.st.Members {
		if m.Issue == end.Issue && strings.EqualFold(s.in.Members[j].Settings.Repo.FullName(), end.Repo.FullName()) {
			i = j
		}
	}
	if i < 0 {
		return
	}
	m := &s.st.Members[i]
	m.CostUSD += end.Result.CostUSD
	s.st.CostUSD += end.Result.CostUSD
	switch {
	case end.Result.Reason == contract.ReasonMerged:
		if m.State != contract.MemberMerged {
			m.State = contract.MemberMerged
			s.event(ctx, fmt.Sprintf("%s: pull request #%d was merged", m.Repo, m.Pull))
		}
	case s.over() || m.State == contract.MemberClosed:
	default:
		m.State, m.Message = contract.MemberFailed, fmt.Sprintf("its pull request #%d ended %s: %s", m.Pull, end.Result.Reason, end.Result.Message)
		s.compensate(ctx, contract.SetFailed, fmt.Sprintf("%s failed: %s", m.Repo, m.Message))
	}
}

// childOptions are the options of member i's issue work on issue n.
func (s *set) childOptions(ctx workflow.Context, i, n int) workflow.Context {
	mi := s.in.Members[i]
	return workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            contract.IssueWorkID(s.sessionID(i, n)),
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// Its follower outlives it; the set cancels what it must itself.
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
		// A cancelled member's work ends its own way: it tells the set
		// which pull request it opened (closeCancelled waits for that).
		WaitForCancellation:   true,
		TypedSearchAttributes: temporal.NewSearchAttributes(issue.ChildAttributes(mi.Settings, mi.Session.Host, n)...),
		StaticSummary:         fmt.Sprintf("%s#%d of change set %s", mi.Settings.Repo.FullName(), n, s.in.Spec.Name),
	})
}
