package activities

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/redact"
	"github.com/durable-ralph/ralph/tasks"
)

// RunIteration runs the agent once on the workspace and reports what it
// did. Agent failures are results; errors are left for infrastructure
// failures (retried by Temporal) and for what no retry can fix
// (non-retryable).
func (a *Agent) RunIteration(ctx context.Context, in contract.IterationInput) (contract.IterationResult, error) {
	var prev *contract.Progress
	if activity.HasHeartbeatDetails(ctx) {
		var p contract.Progress
		if err := activity.GetHeartbeatDetails(ctx, &p); err == nil {
			prev = &p
		}
	}
	if prev == nil && in.Resume != nil {
		prev = in.Resume // an earlier try whose host went offline
	}
	beat := func(p contract.Progress) { activity.RecordHeartbeat(ctx, p) }
	info := activity.GetInfo(ctx)
	// A rewind of the session (a reset that ended this run) cancels it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer running.track(info.WorkflowExecution.ID, info.WorkflowExecution.RunID, cancel)()
	if a.Slots != nil {
		release, err := a.takeSlot(ctx, in, prev, beat)
		if err != nil {
			return contract.IterationResult{}, err
		}
		defer release()
	}
	run := *a
	if rp := info.RetryPolicy; rp != nil && rp.MaximumAttempts > 0 && info.Attempt >= rp.MaximumAttempts {
		run.lastAttempt = true
	}
	done := run.recordAttempt(ctx, info)
	defer done()
	// Beat well within the heartbeat timeout, whatever the session set.
	if hb := info.HeartbeatTimeout; hb > 0 && run.heartbeatInterval() > hb/4 {
		run.HeartbeatInterval = hb / 4
	}
	keep := newKeepAlive(prev, beat)
	keep.start(run.heartbeatInterval())
	defer keep.stop()
	res, err := run.Iterate(ctx, in, int(info.Attempt), prev, keep.beat)
	if err == nil && a.Observe != nil {
		a.Observe(res)
	}
	return res, err
}

// Iterate is one iteration outside of Temporal's bookkeeping: attempt
// numbers the try, prev is the last progress a dead earlier try reported
// (or nil), and beat receives progress every HeartbeatInterval.
// RunIteration is Iterate with Temporal's heartbeats.
func (a *Agent) Iterate(ctx context.Context, in contract.IterationInput, attempt int, prev *contract.Progress, beat func(contract.Progress)) (contract.IterationResult, error) {
	run := *a
	if run.Redact == nil {
		run.Redact = redact.New(append(os.Environ(), a.Env...), a.Secrets...)
	}
	res, err := run.iterate(ctx, in, attempt, prev, beat)
	if err != nil {
		return contract.IterationResult{}, run.Redact.Error(run.unsafeRepo(in.Workspace, err))
	}
	return run.Redact.Value(res).(contract.IterationResult), nil
}

// iteration is one run of Iterate, as it goes through its steps.
type iteration struct {
	in       contract.IterationInput
	attempt  int
	started  time.Time
	backend  agent.Backend
	repo     *git.Repo
	key      string
	progress *contract.Progress
	beat     func(contract.Progress)
	// prev is the last progress of a dead earlier attempt; interrupted
	// says it had started (it knew its start commit).
	prev        *contract.Progress
	interrupted bool
	// adopted says the dead attempt's agent had finished: its run is
	// recorded, the agent not run again (adopted). earlier is the last
	// progress of an attempt before the adopted one, when the adopted
	// one never beat.
	adopted bool
	earlier *contract.Progress
	mode    contract.Mode
	promise string
	// recovered is what the last runs of in.Uncounted cost beyond what
	// the session counted (recoverUncounted).
	recovered contract.Progress
	// saved is the commit of the work a dead attempt left, made before
	// this attempt (commitInterrupted); "" when there was none.
	saved string
	// before is the task file as the iteration found it; beforeErr says
	// why it could not be read.
	before    tasks.State
	beforeErr error
	warnings  []string
	// pending is git status after the agent, until it may be stale; nil is unknown.
	pending *[]string
}

func (a *Agent) iterate(ctx context.Context, in contract.IterationInput, attempt int, prev *contract.Progress, beat func(contract.Progress)) (contract.IterationResult, error) {
	unlock, err := lockSession(ctx, in.Key())
	if err != nil {
		return contract.IterationResult{}, err
	}
	defer unlock()
	it, err := a.open(ctx, in, attempt, prev, beat)
	if err != nil {
		return contract.IterationResult{}, err
	}
	// A retry after the iteration already finished returns what it
	// recorded, committing first if the commit did not happen. A first
	// attempt has nothing to read back.
	if it.attempt > 1 || in.Resume != nil {
		if res, ok, err := a.records().loadResult(in.Key(), in.Iteration); err != nil {
			return contract.IterationResult{}, err
		} else if ok {
			return a.finishCommit(ctx, it.repo, in, res, commitPlan{lookFirst: true})
		}
	}
	keep := make([]int, len(in.Uncounted))
	for i, u := range in.Uncounted {
		keep[i] = u.Iteration
	}
	a.recoverUncounted(it)
	a.records().prune(in.Key(), in.Iteration, keep...)
	if removed := it.repo.ClearStaleLocks(); len(removed) > 0 {
		it.warnings = append(it.warnings, "removed lock files a killed git left: "+strings.Join(removed, ", "))
	}
	run, adopted, err := a.adopted(ctx, it)
	if err != nil {
		return contract.IterationResult{}, err
	}
	it.adopted = adopted
	if err := a.start(ctx, it); err != nil {
		return contract.IterationResult{}, err
	}
	if err := a.records().saveStart(in.Key(), in.Iteration, *it.progress); err != nil {
		it.warnings = append(it.warnings, err.Error())
	}
	resumed := false
	if !adopted {
		if run, resumed, err = a.runFresh(ctx, it); err != nil {
			return contract.IterationResult{}, err
		}
	}
	res := it.result(run, resumed)
	if res.Outcome == contract.OutcomePermanent {
		return contract.IterationResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("agent failed permanently: %s", res.Reason), contract.ErrTypeAgentPermanent, nil)
	}
	if err := a.examine(ctx, it, run, &res); err != nil {
		return contract.IterationResult{}, err
	}
	if res.CompletionClaimed && strings.TrimSpace(in.Task.CheckCommand) != "" {
		res.Check = a.check(ctx, in, func() { it.beat(*it.progress) })
		it.pending = nil // the check may have written files
		if !res.Check.Passed {
			res.Notices = append(res.Notices, checkNotice(*res.Check))
		}
	}
	if res.Outcome == contract.OutcomeRateLimited {
		// Nothing to record: the workflow runs this iteration again after
		// the limit resets.
		return res, nil
	}
	if err := a.guardProtected(ctx, it, &res); err != nil {
		return contract.IterationResult{}, err
	}
	if err := a.records().saveResult(in.Key(), in.Iteration, res); err != nil {
		// The commit's trailers still make the retry of a lost result
		// find the work; what the agent did and cost is reported.
		res.Warnings = append(res.Warnings, err.Error())
	}
	// Only a retry, or a try after one whose host went away, can find
	// the iteration's commit already made.
	return a.finishCommit(ctx, it.repo, in, res, commitPlan{pending: it.pending, lookFirst: it.attempt > 1 || it.interrupted})
}

// open checks the iteration's input and opens its workspace.
func (a *Agent) open(ctx context.Context, in contract.IterationInput, attempt int, prev *contract.Progress, beat func(contract.Progress)) (*iteration, error) {
	it := &iteration{in: in, attempt: attempt, prev: prev, started: time.Now(), beat: func(contract.Progress) {}}
	if beat != nil {
		it.beat = func(p contract.Progress) { beat(a.Redact.Value(p).(contract.Progress)) }
	}
	if len(in.Agent.Command) == 0 || in.Agent.Command[0] == "" {
		return nil, temporal.NewNonRetryableApplicationError("agent command is empty", contract.ErrTypeInvalidAgentConfig, nil)
	}
	var err error
	if it.backend, err = BackendOf(in.Agent.Backend); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidAgentConfig, err)
	}
	if it.repo, err = a.openRepo(ctx, in.Workspace); err != nil {
		return nil, err
	}
	it.key = safeName(in.Key())
	if attempt > 1 {
		// An attempt that died before its first heartbeat is newer than
		// the progress Temporal kept: the worker recorded how it started.
		if rec := a.records().lastStart(in.Key(), in.Iteration, attempt); rec != nil && (it.prev == nil || rec.Attempt > it.prev.Attempt) {
			it.prev = rec
		}
	}
	it.interrupted = it.prev != nil && it.prev.StartHead != ""
	if !it.interrupted && attempt > 1 && in.RoleOf() == contract.RoleExecutor {
		if it.prev, err = a.orphaned(ctx, it); err != nil {
			return nil, err
		}
		it.interrupted = it.prev != nil
	}
	return it, nil
}

// orphaned is the progress of an earlier attempt that died before its
// first heartbeat, when it left work uncommitted: its start is HEAD and
// its story the one HEAD's task file has next. Without it, the retry
// would find that story done and fold its work into the next story's
// commit. It is nil when the workspace is clean.
func (a *Agent) orphaned(ctx context.Context, it *iteration) (*contract.Progress, error) {
	pending, err := it.repo.Status(ctx)
	if err != nil || len(pending) == 0 {
		return nil, err
	}
	return it.progressAtHead(ctx, it.attempt-1)
}

// progressAtHead is the progress of an attempt that started at HEAD, on
// the story HEAD's task file has next; nil in a repository without
// commits.
func (it *iteration) progressAtHead(ctx context.Context, attempt int) (*contract.Progress, error) {
	head, err := it.repo.Head(ctx)
	if err != nil || head == "" {
		return nil, err
	}
	prev := &contract.Progress{Attempt: attempt, Iteration: it.in.Iteration, Role: it.in.Role, StartHead: head}
	if mode, _, err := resolveTask(it.in.Workspace, it.in.Task); err == nil {
		if data, err := it.repo.FileAt(ctx, head, mode.File()); err == nil {
			if st, err := tasks.Parse(mode, data); err == nil {
				if next, ok := st.Next(); ok {
					prev.StoryID, prev.StoryTitle = next.ID, next.Title
				}
			}
		}
	}
	return prev, nil
}

// start settles where the iteration starts: its start commit (the dead
// attempt's, so that its partial work is counted and committed), its
// task file and story, a reviewer's snapshot, and what an interrupted
// attempt left.
func (a *Agent) start(ctx context.Context, it *iteration) error {
	in, repo, prev := it.in, it.repo, it.prev
	if err := excludeState(ctx, repo, in.Workspace); err != nil {
		return err
	}
	it.progress = &contract.Progress{Attempt: it.attempt, Iteration: in.Iteration, Role: in.Role}
	var err error
	if it.interrupted {
		it.progress.StartHead = prev.StartHead
		it.carryEarlier()
	} else {
		if err := a.commitFailedWork(ctx, it); err != nil {
			return err
		}
		if it.progress.StartHead, err = repo.Head(ctx); err != nil {
			return err
		}
	}
	if it.mode, it.promise, err = resolveTask(in.Workspace, in.Task); in.RoleOf() == contract.RolePlanner {
		// The planner writes the task file: there may be none yet.
		it.mode, it.promise, err = contract.ModePRD, tasks.DefaultPromise(contract.ModePRD), nil
	}
	if err != nil {
		return err
	}
	// The dead attempt's agent cannot be resumed; an adopted one needs
	// nothing more.
	fresh := it.interrupted && prev.AgentSessionID == "" && !it.adopted
	if fresh && in.Agent.ResetInterrupted {
		if err := repo.ResetHard(ctx, it.progress.StartHead); err != nil {
			return fmt.Errorf("reset the interrupted iteration: %w", err)
		}
	}
	if it.interrupted && !it.adopted && !(fresh && in.Agent.ResetInterrupted) {
		if err := a.commitInterrupted(ctx, it); err != nil {
			return err
		}
	}
	if err := it.snapshotReview(ctx); err != nil {
		return err
	}
	it.before, it.beforeErr = tasks.Load(in.Workspace, it.mode)
	if it.interrupted && prev.StoryID != "" && (it.saved == "" || !fresh) {
		// The dead attempt's story, which a resumed agent goes on with.
		it.progress.StoryID, it.progress.StoryTitle = prev.StoryID, prev.StoryTitle
	} else if next, ok := it.before.Next(); ok {
		it.progress.StoryID, it.progress.StoryTitle = next.ID, next.Title
	}
	if fresh && !in.Agent.ResetInterrupted {
		note, err := interruptedNote(ctx, repo, it.progress.StartHead, it.saved)
		if err != nil {
			return err
		}
		it.in.Guidance = append([]string{note}, in.Guidance...)
	}
	return nil
}

// snapshotReview keeps the workspace as a reviewer found it, which it
// must leave as it is; a retried attempt keeps the first attempt's.
func (it *iteration) snapshotReview(ctx context.Context) error {
	if it.in.RoleOf() != contract.RoleReviewer {
		return nil
	}
	if it.interrupted && it.prev.ReviewStart != nil {
		it.progress.ReviewStart = it.prev.ReviewStart
		return nil
	}
	snap, err := it.repo.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("snapshot the workspace before the review: %w", err)
	}
	it.progress.ReviewStart = &snap
	return nil
}

// openLog opens the attempt's raw stream log: the worker's record of it
// (records), which a retry may adopt, and the copy for people under the
// workspace's .ralph/logs, whose first record is the prompt
// (contract.LogPromptType). The logs are for people; an iteration runs without
// them rather than not at all (a full disk, a read-only .ralph).
func (a *Agent) openLog(it *iteration, prompt string) (io.Writer, func()) {
	base := fmt.Sprintf("iteration-%04d", it.in.Iteration)
	logDir := filepath.Join(contract.StateDir, "logs", it.key)
	k := freeAttempt(filepath.Join(it.in.Workspace, logDir), base, it.attempt)
	logName := fmt.Sprintf("%s.attempt-%d.jsonl", base, k)
	logw, closeLog, err := createLog(it.in.Workspace, filepath.Join(logDir, logName), a.Redact.String(prompt))
	if err != nil {
		it.warnings = append(it.warnings, err.Error())
	}
	if logw != io.Discard {
		it.progress.Log = filepath.ToSlash(filepath.Join(contract.StateDir, "logs", it.key, logName))
	}
	if a.Records == "" {
		return logw, closeLog
	}
	rec, err := a.records().createStream(it.in.Key(), it.in.Iteration, it.attempt)
	if err != nil {
		it.warnings = append(it.warnings, err.Error())
		return logw, closeLog
	}
	return io.MultiWriter(rec, logw), func() { rec.Close(); closeLog() }
}

// freeAttempt is the number of the attempt's log in dir: attempt, or the
// next one no log has, so that no run's log is written over (a rate
// limit or a host that came back runs the same iteration again as a new
// activity, whose attempts count from 1 again).
// The directory is the agent's to write: past maxAttemptLogs numbers
// taken (files it planted), the last one is written over.
func freeAttempt(dir, base string, attempt int) int {
	k := max(attempt, 1)
	for last := k + maxAttemptLogs; k < last; k++ {
		if _, err := os.Lstat(filepath.Join(dir, fmt.Sprintf("%s.attempt-%d.jsonl", base, k))); err != nil {
			break
		}
	}
	return k
}

// maxAttemptLogs bounds the logs freeAttempt looks for.
const maxAttemptLogs = 1000

// runFresh builds the prompt, opens the attempt's log and runs the agent
// (runOrResume).
func (a *Agent) runFresh(ctx context.Context, it *iteration) (agentRun, bool, error) {
	prompt, err := a.prompt(it.in, it.mode, it.promise, it.before, it.beforeErr)
	if err != nil {
		return agentRun{}, false, fmt.Errorf("build prompt: %w", err)
	}
	logw, closeLog := a.openLog(it, prompt)
	defer closeLog()
	return a.runOrResume(ctx, it, prompt, logw)
}

// runOrResume runs the agent: it continues the agent's own session when
// that survived a dead attempt's worker, so the work of the dead attempt
// is not done twice, and starts afresh otherwise.
func (a *Agent) runOrResume(ctx context.Context, it *iteration, prompt string, logw io.Writer) (agentRun, bool, error) {
	if it.interrupted && it.prev.AgentSessionID != "" {
		it.progress.AgentSessionID = it.prev.AgentSessionID
		run, err := a.runAgent(ctx, it.in, it.backend, resumePrompt(it.saved), it.prev.AgentSessionID, logw, it.progress, it.beat)
		if err != nil {
			return agentRun{}, false, err
		}
		if !run.resumeFailed {
			return run, true, nil
		}
		it.progress.AgentSessionID = ""
	}
	run, err := a.runAgent(ctx, it.in, it.backend, prompt, "", logw, it.progress, it.beat)
	return run, false, err
}

// result is what the agent's run says of the iteration.
func (it *iteration) result(run agentRun, resumed bool) contract.IterationResult {
	res := contract.IterationResult{
		Iteration:         it.in.Iteration,
		Role:              it.in.Role,
		Outcome:           run.verdict.Outcome,
		Reason:            run.verdict.Reason,
		AgentSessionID:    run.summary.SessionID,
		Model:             run.summary.Model,
		CostUSD:           run.summary.CostUSD,
		CostNote:          costNote(run.summary),
		Usage:             run.summary.Usage,
		NumTurns:          run.summary.Turns,
		Duration:          time.Since(it.started),
		ResultText:        truncate(run.summary.FinalText, 2000),
		RateLimitResetsAt: run.verdict.ResetsAt,
		Resumed:           resumed,
		Repair:            it.beforeErr != nil && it.in.RoleOf() == contract.RoleExecutor,
		Live:              run.live,
		LiveStartedAt:     run.started,
		Contained:         run.contained,
		Refused:           run.refused,
		LogFile:           it.progress.Log,
		InterruptedCommit: it.saved,
	}
	if it.interrupted {
		// Attempts before the dead one, which died too.
		res.CostUSD += it.prev.EarlierCostUSD
		res.Usage = res.Usage.Add(it.prev.EarlierUsage)
	}
	if it.interrupted && !it.adopted && !(resumed && sessionTotals(it.backend)) {
		// What the dead attempt reported in its last heartbeat is counted
		// here, once. Claude Code reports cost only in its final result
		// event, so an attempt that died before printing one adds nothing.
		res.CostUSD += it.prev.CostUSD
		res.Usage = res.Usage.Add(it.prev.Usage)
	}
	res.CostUSD += it.recovered.CostUSD
	res.Usage = res.Usage.Add(it.recovered.Usage)
	if e := it.earlier; e != nil {
		// An attempt before the adopted one, counted from its last beat,
		// and those before it.
		res.CostUSD += e.CostUSD + e.EarlierCostUSD
		res.Usage = res.Usage.Add(e.Usage).Add(e.EarlierUsage)
	}
	return res
}

// examine looks at what the agent left: git history first, then what
// its role made of the workspace.
func (a *Agent) examine(ctx context.Context, it *iteration, run agentRun, res *contract.IterationResult) error {
	in, repo, start := it.in, it.repo, it.progress.StartHead
	if err := a.guardHistory(ctx, repo, in, start, res); err != nil {
		return err
	}
	if err := restoreLinkedTaskFile(ctx, it, res); err != nil {
		return err
	}
	var err error
	switch in.RoleOf() {
	case contract.RoleReviewer:
		err = a.review(ctx, repo, in, it.mode, *it.progress.ReviewStart, run.summary.FinalText, res)
	case contract.RolePlanner:
		err = a.checkPlan(ctx, repo, in, start, res)
	default:
		err = a.inspect(ctx, it, run.summary.FinalText, res)
	}
	if err != nil {
		return err
	}
	if it.interrupted && it.saved == "" && it.progress.StoryID != "" {
		// The task file may already show the dead attempt's work as done;
		// the iteration's story is the one it started with.
		res.StoryID, res.StoryTitle = it.progress.StoryID, it.progress.StoryTitle
	}
	res.Warnings = append(res.Warnings, it.warnings...)
	return nil
}

// sessionTotals reports whether b's resumed runs report their whole
// session's usage.
func sessionTotals(b agent.Backend) bool {
	s, ok := b.(agent.SessionUsage)
	return ok && s.ResumedUsageIsSessionTotal()
}

// costNote says why s's cost is not the run's, "" when it is.
func costNote(s agent.Summary) string {
	if s.CostKnown {
		return ""
	}
	return s.CostNote
}

// truncate keeps the last n bytes of s: an agent's conclusion is at the end.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + strings.ToValidUTF8(s[len(s)-n:], "")
}

// inspect fills in what the iteration changed in the workspace.
func (a *Agent) inspect(ctx context.Context, it *iteration, finalText string, res *contract.IterationResult) error {
	repo, in, promise, before, startHead := it.repo, it.in, it.promise, it.before, it.progress.StartHead
	after, err := tasks.Load(in.Workspace, it.mode)
	switch {
	case err != nil:
		// The agent broke the task file. The iteration failed; the next
		// prompt shows the error so the agent can repair it.
		res.TaskFileError = err.Error()
		if res.Outcome == contract.OutcomeSuccess {
			res.Outcome = contract.OutcomeAgentError
			res.Reason = "task file unreadable after the iteration: " + err.Error()
		}
		res.Task = taskState(before)
	default:
		res.Task = taskState(after)
		res.StoryID, res.StoryTitle = workedOn(before, after, it.progress.StoryID, it.progress.StoryTitle)
	}
	if res.Outcome == contract.OutcomeSuccess && !res.Repair {
		res.CompletionClaimed = tasks.ClaimsCompletion(finalText, promise)
	}

	pending, err := recordChanges(ctx, repo, startHead, res)
	if err != nil {
		return err
	}
	it.pending = &pending

	keep := filepath.Join(contract.StateDir, "state", safeName(in.Key()), fmt.Sprintf("checkpoint-%04d.json", in.Iteration))
	cp, err := takeCheckpoint(in.Workspace, keep)
	if err != nil {
		return err
	}
	if cp == nil {
		if cp, err = tagCheckpoint(finalText); err != nil {
			cp = &contract.CheckpointRequest{Type: contract.CheckpointDecision, Question: words.Cut(finalText, maxQuestion), Context: err.Error(), Source: "tag"}
		}
	}
	res.Checkpoint = cp
	return nil
}
