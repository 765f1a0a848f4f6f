// Package activities holds the side effects of a Ralph session: preparing
// the workspace, running one agent iteration (prompt, process, stream,
// heartbeats, classification, commit), and the types the workflows pass to
// them.
package activities

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
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

// Defaults of Agent's tunables.
const (
	DefaultHeartbeatInterval = 2 * time.Second
	DefaultMaxLogBytes       = 64 << 20
	// DefaultMaxLineBytes bounds the memory one stream line can take. The
	// events Ralph reads (init, text, result, rate limits) are small; only
	// tool inputs and outputs grow, Claude Code truncates those far below
	// this, and Ralph does not need them.
	DefaultMaxLineBytes = 4 << 20
)

// contract.StateDir is Ralph's directory inside a workspace; it is excluded from git.

// Agent runs agent iterations on workspaces of this worker's host. Its
// fields are the worker's settings, not the session's.
type Agent struct {
	// Env is added to the agent's environment, after the worker's
	// variables that AgentEnvAllowed lets through: NAME passes the
	// worker's variable, NAME=value sets one.
	Env []string
	// Redact removes secrets from everything the activities return,
	// record or log; nil redacts the secret-looking variables of the
	// worker's environment and of Env.
	Redact *redact.Redactor
	// HeartbeatInterval is how often a running iteration heartbeats;
	// default DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// MaxLogBytes caps the raw stream saved per iteration; default
	// DefaultMaxLogBytes.
	MaxLogBytes int64
	// MaxLineBytes is the longest stream line parsed; longer lines are
	// counted as invalid and skipped. Default DefaultMaxLineBytes.
	MaxLineBytes int
	// Host is the host ID of the worker's machine (HostReady says it).
	Host string
	// Slots caps the agents the worker runs at once; nil is no cap.
	Slots *Slots
	// OnSlot is told when an iteration starts and stops waiting for a
	// slot, so that its session can show it; nil tells nobody.
	OnSlot func(ctx context.Context, ev SlotEvent)
	// Observe is given the result of every iteration RunIteration ran
	// (the worker's metrics); nil is nobody.
	Observe func(contract.IterationResult)
}

// HostReady answers on the task queue of this worker's host: a session
// whose host was offline runs it to learn that the host is back.
func (a *Agent) HostReady(ctx context.Context) (string, error) {
	return a.Host, nil
}

// WorkspaceCheck is what CheckWorkspace found.
type WorkspaceCheck struct {
	repo    *git.Repo
	Mode    contract.Mode
	Promise string
	State   tasks.State
	// UncommittedTaskFile is the task file when it is the workspace's only
	// uncommitted change: a task file written just before the first run.
	UncommittedTaskFile string
}

// CheckWorkspace checks what a session needs of its workspace, changing
// nothing: a git work tree, clean unless allowed (the task file alone may
// be uncommitted), with a readable task file. PrepareWorkspace runs it on
// the worker; the starter runs it before it starts a session on a
// workspace of its own machine, so that a bad workspace is one clear
// error rather than a failed session.
func CheckWorkspace(ctx context.Context, in contract.PrepareInput) (WorkspaceCheck, error) {
	repo, err := openWorkspace(ctx, in.Workspace)
	if err != nil {
		return WorkspaceCheck{}, err
	}
	check := WorkspaceCheck{repo: repo}
	mode, promise, modeErr := resolveTask(in.Workspace, in.Task)
	if in.Planning {
		mode, promise, modeErr = contract.ModePRD, tasks.DefaultPromise(contract.ModePRD), nil
		if m := in.Task.Mode; m != "" && m != string(contract.ModePRD) {
			modeErr = temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("a session that plans writes prd.json, but task.mode is %s", m), contract.ErrTypeInvalidTaskFile, nil)
		}
	}
	if !in.Git.AllowDirty {
		all, err := repo.Status(ctx)
		if err != nil {
			return WorkspaceCheck{}, fmt.Errorf("git status: %w", err)
		}
		var dirty []string
		for _, p := range all {
			if p != contract.StateDir+"/" && !strings.HasPrefix(p, contract.StateDir+"/") {
				dirty = append(dirty, p)
			}
		}
		switch {
		case len(dirty) == 1 && modeErr == nil && dirty[0] == mode.File():
			check.UncommittedTaskFile = dirty[0]
		case len(dirty) > 0:
			shown := dirty
			if len(shown) > 5 {
				shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(dirty)-5))
			}
			return WorkspaceCheck{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("workspace %s has uncommitted changes (%s): commit or stash them, or allow a dirty tree (--allow-dirty)",
					in.Workspace, strings.Join(shown, ", ")), contract.ErrTypeDirtyWorkspace, nil)
		}
	}
	if modeErr != nil {
		return WorkspaceCheck{}, modeErr
	}
	st, err := tasks.Load(in.Workspace, mode)
	if err != nil && !in.Planning {
		return WorkspaceCheck{}, invalidTaskFile(err)
	}
	if _, err := tasks.LoadInstructions(in.Workspace, in.Task.InstructionsFile); err != nil {
		return WorkspaceCheck{}, invalidTaskFile(err)
	}
	check.Mode, check.Promise, check.State = mode, promise, st
	return check, nil
}

// PrepareWorkspace checks the workspace once at the start of a session
// (CheckWorkspace); prd.json's branchName is checked out, and a task file
// that is the only uncommitted change is committed, saying so. A session
// in a work tree (in.Worktree) makes it first and stays on its branch,
// whatever branchName says: two work trees cannot share a branch.
func (a *Agent) PrepareWorkspace(ctx context.Context, in contract.PrepareInput) (contract.PrepareResult, error) {
	if in.Worktree != nil {
		if err := prepareWorktree(ctx, *in.Worktree, in.Workspace); err != nil {
			return contract.PrepareResult{}, err
		}
	}
	check, err := CheckWorkspace(ctx, in)
	if err != nil {
		return contract.PrepareResult{}, err
	}
	repo, st := check.repo, check.State
	if err := excludeState(ctx, repo, in.Workspace); err != nil {
		return contract.PrepareResult{}, err
	}
	if st.BranchName != "" && in.Worktree == nil {
		if err := repo.Checkout(ctx, st.BranchName); err != nil {
			return contract.PrepareResult{}, fmt.Errorf("check out branch %s from prd.json: %w", st.BranchName, err)
		}
	}
	if f := check.UncommittedTaskFile; f != "" && in.Git.AutoCommit {
		if _, err := repo.CommitAll(ctx, "ralph: add the task file "+f,
			f+" was not committed when the session started: Ralph commits it before the first iteration.",
			in.SessionID, 0); err != nil {
			return contract.PrepareResult{}, fmt.Errorf("commit the task file %s: %w", f, err)
		}
	}
	branch, err := repo.Branch(ctx)
	if err != nil {
		return contract.PrepareResult{}, err
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return contract.PrepareResult{}, err
	}
	return contract.PrepareResult{
		Mode:              string(check.Mode),
		CompletionPromise: check.Promise,
		Branch:            branch,
		Head:              head,
		Task:              taskState(st),
		Repo:              repo.RepoName(ctx),
	}, nil
}

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
	if a.Slots != nil {
		release, err := a.takeSlot(ctx, in, prev, beat)
		if err != nil {
			return contract.IterationResult{}, err
		}
		defer release()
	}
	run := *a
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

// keepAlive heartbeats an iteration for as long as it runs, not only
// while its agent does: what follows the agent (git on a large tree, the
// commit) must not look like a dead worker. Between the agent's own
// beats it repeats the last progress, or the dead attempt's until there
// is one, so that a retry always finds the latest.
type keepAlive struct {
	mu    sync.Mutex
	last  *contract.Progress
	send  func(contract.Progress)
	beats chan struct{} // a beat was sent: the ticker may wait again
	done  chan struct{}
	ended chan struct{}
}

func newKeepAlive(prev *contract.Progress, send func(contract.Progress)) *keepAlive {
	return &keepAlive{last: prev, send: send, beats: make(chan struct{}, 1), done: make(chan struct{}), ended: make(chan struct{})}
}

// start repeats the last progress every interval without a beat, until
// stop.
func (k *keepAlive) start(interval time.Duration) {
	go func() {
		defer close(k.ended)
		k.run(interval)
	}()
}

// stop ends the repeats and returns when the last has been sent. It is
// called once.
func (k *keepAlive) stop() {
	close(k.done)
	<-k.ended
}

// beat sends p and keeps it as the last progress.
func (k *keepAlive) beat(p contract.Progress) {
	k.mu.Lock()
	k.last = &p
	k.mu.Unlock()
	k.send(p)
	select {
	case k.beats <- struct{}{}:
	default:
	}
}

// run repeats the last progress when no beat came for an interval.
func (k *keepAlive) run(interval time.Duration) {
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-k.done:
			return
		case <-k.beats:
		case <-t.C:
			k.mu.Lock()
			last := k.last
			k.mu.Unlock()
			if last != nil {
				k.send(*last)
			}
		}
		t.Reset(interval)
	}
}

// takeSlot takes one of the worker's agent slots for the iteration,
// waiting while they are all taken. While it waits it heartbeats the
// progress of a dead earlier attempt (so that the next attempt still
// finds it) with a line that says what it waits for, and tells the
// session through OnSlot.
func (a *Agent) takeSlot(ctx context.Context, in contract.IterationInput, prev *contract.Progress, beat func(contract.Progress)) (release func(), err error) {
	if a.Slots.TryAcquire() {
		return a.Slots.Release, nil
	}
	info := activity.GetInfo(ctx)
	ev := SlotEvent{
		WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		Iteration: in.Iteration, Waiting: true, Running: a.Slots.Running(), Max: a.Slots.Max(),
	}
	notify := func(ev SlotEvent) {
		if a.OnSlot != nil {
			a.OnSlot(ctx, ev)
		}
	}
	notify(ev)
	waiting := contract.Progress{Attempt: int(info.Attempt), Iteration: in.Iteration}
	if prev != nil {
		waiting = *prev
		waiting.Attempt, waiting.Live = int(info.Attempt), nil
	}
	since := time.Now()
	tick := func() {
		waiting.Tail = []string{fmt.Sprintf("waiting for an agent slot: %d of %d in use on this worker (%s so far)",
			a.Slots.Running(), a.Slots.Max(), time.Since(since).Round(time.Second))}
		waiting.UpdatedAt = time.Now()
		beat(waiting)
	}
	tick()
	interval := a.heartbeatInterval()
	if hb := info.HeartbeatTimeout; hb > 0 && interval > hb/4 {
		interval = hb / 4
	}
	// Wait no longer than leaves the attempt time for its agent: its
	// start-to-close timeout counts the wait too.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if deadline := info.Deadline; !deadline.IsZero() {
		budget := max(time.Until(deadline)-in.Agent.Timeout-slotWaitMargin, minSlotWait)
		wctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	if err := a.Slots.Acquire(wctx, interval, tick); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, temporal.NewApplicationErrorWithOptions(
			fmt.Sprintf("all %d agent slots of this worker stayed in use for %s", a.Slots.Max(), time.Since(since).Round(time.Second)), contract.ErrTypeAgentSlotBusy, temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{waiting}})
	}
	ev.Waiting = false
	notify(ev)
	return a.Slots.Release, nil
}

// Bounds of an attempt's wait for an agent slot: it ends slotWaitMargin
// before the time the agent needs, and lasts at least minSlotWait.
const (
	slotWaitMargin = 30 * time.Second
	minSlotWait    = 10 * time.Second
)

func (a *Agent) heartbeatInterval() time.Duration {
	if a.HeartbeatInterval > 0 {
		return a.HeartbeatInterval
	}
	return DefaultHeartbeatInterval
}

// Iterate is one iteration outside of Temporal's bookkeeping: attempt
// numbers the try, prev is the last progress a dead earlier try reported
// (or nil), and beat receives progress every HeartbeatInterval.
// RunIteration is Iterate with Temporal's heartbeats.
func (a *Agent) Iterate(ctx context.Context, in contract.IterationInput, attempt int, prev *contract.Progress, beat func(contract.Progress)) (contract.IterationResult, error) {
	run := *a
	if run.Redact == nil {
		run.Redact = redact.New(append(os.Environ(), a.Env...))
	}
	res, err := run.iterate(ctx, in, attempt, prev, beat)
	if err != nil {
		return contract.IterationResult{}, run.Redact.Error(err)
	}
	return run.Redact.Value(res).(contract.IterationResult), nil
}

func (a *Agent) iterate(ctx context.Context, in contract.IterationInput, attempt int, prev *contract.Progress, beat func(contract.Progress)) (contract.IterationResult, error) {
	started := time.Now()
	if beat == nil {
		beat = func(contract.Progress) {}
	} else {
		inner := beat
		beat = func(p contract.Progress) { inner(a.Redact.Value(p).(contract.Progress)) }
	}
	if len(in.Agent.Command) == 0 || in.Agent.Command[0] == "" {
		return contract.IterationResult{}, temporal.NewNonRetryableApplicationError("agent command is empty", contract.ErrTypeInvalidAgentConfig, nil)
	}
	backend, err := BackendOf(in.Agent.Backend)
	if err != nil {
		return contract.IterationResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidAgentConfig, err)
	}
	repo, err := openWorkspace(ctx, in.Workspace)
	if err != nil {
		return contract.IterationResult{}, err
	}
	key := safeName(in.Key())
	logDir := filepath.Join(in.Workspace, contract.StateDir, "logs", key)
	resultFile := filepath.Join(in.Workspace, contract.StateDir, "state", key, fmt.Sprintf("iteration-%04d.json", in.Iteration))

	// A retry after the iteration already finished returns what it
	// recorded, committing first if the commit did not happen.
	if res, ok, err := loadResult(resultFile); err != nil {
		return contract.IterationResult{}, err
	} else if ok {
		return a.finishCommit(ctx, repo, in, res, resultFile)
	}

	if err := excludeState(ctx, repo, in.Workspace); err != nil {
		return contract.IterationResult{}, err
	}
	var warnings []string
	warn := func(err error) { warnings = append(warnings, err.Error()) }

	role := in.RoleOf()
	progress := &contract.Progress{Attempt: attempt, Iteration: in.Iteration, Role: in.Role}
	if prev != nil && prev.StartHead != "" {
		// A previous attempt died mid-run: measure this iteration from
		// where it started, so its partial work is counted and committed.
		progress.StartHead = prev.StartHead
	} else if progress.StartHead, err = repo.Head(ctx); err != nil {
		return contract.IterationResult{}, err
	}

	mode, promise, err := resolveTask(in.Workspace, in.Task)
	if role == contract.RolePlanner {
		// The planner writes the task file: there may be none yet.
		mode, promise, err = contract.ModePRD, tasks.DefaultPromise(contract.ModePRD), nil
	}
	if err != nil {
		return contract.IterationResult{}, err
	}
	interrupted := prev != nil && prev.StartHead != ""
	if interrupted && prev.AgentSessionID == "" && in.Agent.ResetInterrupted {
		if err := repo.ResetHard(ctx, progress.StartHead); err != nil {
			return contract.IterationResult{}, fmt.Errorf("reset the interrupted iteration: %w", err)
		}
	}
	if role == contract.RoleReviewer {
		if interrupted && prev.ReviewStart != nil {
			progress.ReviewStart = prev.ReviewStart
		} else {
			snap, err := repo.Snapshot(ctx)
			if err != nil {
				return contract.IterationResult{}, fmt.Errorf("snapshot the workspace before the review: %w", err)
			}
			progress.ReviewStart = &snap
		}
	}
	before, beforeErr := tasks.Load(in.Workspace, mode)
	if interrupted && prev.StoryID != "" {
		progress.StoryID, progress.StoryTitle = prev.StoryID, prev.StoryTitle
	} else if next, ok := before.Next(); ok {
		progress.StoryID, progress.StoryTitle = next.ID, next.Title
	}
	if interrupted && prev.AgentSessionID == "" && !in.Agent.ResetInterrupted {
		note, err := interruptedNote(ctx, repo, progress.StartHead)
		if err != nil {
			return contract.IterationResult{}, err
		}
		in.Guidance = append([]string{note}, in.Guidance...)
	}
	prompt, err := a.prompt(in, mode, promise, before, beforeErr)
	if err != nil {
		return contract.IterationResult{}, fmt.Errorf("build prompt: %w", err)
	}
	base := fmt.Sprintf("iteration-%04d", in.Iteration)
	logName := fmt.Sprintf("%s.attempt-%d.jsonl", base, attempt)
	// The logs are for people; an iteration runs without them rather
	// than not at all (a full disk, a read-only .ralph).
	logw, closeLog, err := createLog(logDir, base+".prompt.md", logName, a.Redact.String(prompt))
	if err != nil {
		warn(err)
	}
	defer closeLog()
	if logw != io.Discard {
		progress.Log = filepath.ToSlash(filepath.Join(contract.StateDir, "logs", key, logName))
	}

	var run agentRun
	resumed := false
	if interrupted && prev.AgentSessionID != "" {
		// The agent's own session survived its worker: continue it, so
		// the work of the dead attempt is not done twice.
		progress.AgentSessionID = prev.AgentSessionID
		run, err = a.runAgent(ctx, in, backend, resumePrompt, prev.AgentSessionID, logw, progress, beat)
		if err != nil {
			return contract.IterationResult{}, err
		}
		resumed = !run.resumeFailed
		if !resumed {
			progress.AgentSessionID = ""
		}
	}
	if !resumed {
		run, err = a.runAgent(ctx, in, backend, prompt, "", logw, progress, beat)
		if err != nil {
			return contract.IterationResult{}, err
		}
	}

	res := contract.IterationResult{
		Iteration:         in.Iteration,
		Role:              in.Role,
		Outcome:           run.verdict.Outcome,
		Reason:            run.verdict.Reason,
		AgentSessionID:    run.summary.SessionID,
		Model:             run.summary.Model,
		CostUSD:           run.summary.CostUSD,
		CostNote:          costNote(run.summary),
		Usage:             run.summary.Usage,
		NumTurns:          run.summary.Turns,
		Duration:          time.Since(started),
		ResultText:        truncate(run.summary.FinalText, 2000),
		RateLimitResetsAt: run.verdict.ResetsAt,
		Resumed:           resumed,
		Repair:            beforeErr != nil && role == contract.RoleExecutor,
		Live:              run.live,
		LiveStartedAt:     run.started,
	}
	res.LogFile = progress.Log
	if interrupted && !(resumed && sessionTotals(backend)) {
		// What the dead attempt reported in its last heartbeat is counted
		// here, once. Claude Code reports cost only in its final result
		// event, so an attempt that died before printing one adds nothing.
		res.CostUSD += prev.CostUSD
		res.Usage = res.Usage.Add(prev.Usage)
	}
	if res.Outcome == contract.OutcomePermanent {
		return contract.IterationResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("agent failed permanently: %s", res.Reason), contract.ErrTypeAgentPermanent, nil)
	}
	if err := a.guardHistory(ctx, repo, in, progress.StartHead, &res); err != nil {
		return contract.IterationResult{}, err
	}
	switch role {
	case contract.RoleReviewer:
		err = a.review(ctx, repo, in, mode, *progress.ReviewStart, run.summary.FinalText, &res)
	case contract.RolePlanner:
		err = a.checkPlan(ctx, repo, in, progress.StartHead, &res)
	default:
		err = a.inspect(ctx, repo, in, mode, promise, before, progress.StartHead, run.summary.FinalText, &res)
	}
	if err != nil {
		return contract.IterationResult{}, err
	}
	if interrupted && progress.StoryID != "" {
		// The task file may already show the dead attempt's work as done;
		// the iteration's story is the one it started with.
		res.StoryID, res.StoryTitle = progress.StoryID, progress.StoryTitle
	}
	res.Warnings = append(res.Warnings, warnings...)
	if res.CompletionClaimed && strings.TrimSpace(in.Task.CheckCommand) != "" {
		res.Check = a.check(ctx, in, func() { beat(*progress) })
		if !res.Check.Passed {
			res.Notices = append(res.Notices, checkNotice(*res.Check))
		}
	}
	if res.Outcome == contract.OutcomeRateLimited {
		// Nothing to record: the workflow runs this iteration again after
		// the limit resets.
		return res, nil
	}
	if err := saveResult(resultFile, res); err != nil {
		// The commit's trailers still make the retry of a lost result
		// find the work; what the agent did and cost is reported.
		res.Warnings = append(res.Warnings, err.Error())
	}
	return a.finishCommit(ctx, repo, in, res, resultFile)
}

// createLog saves the prompt and opens the raw stream log of one attempt
// under dir. When they cannot be written it returns io.Discard and the
// error, so the iteration still runs.
func createLog(dir, promptName, logName, prompt string) (io.Writer, func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return io.Discard, func() {}, fmt.Errorf("agent log not saved: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, promptName), []byte(prompt), 0o644); err != nil {
		return io.Discard, func() {}, fmt.Errorf("agent log not saved: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, logName))
	if err != nil {
		return io.Discard, func() {}, fmt.Errorf("agent log not saved: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// excludeState keeps Ralph's directory in the workspace out of git. The
// pattern is anchored at the repository's top level, which is the
// workspace's parent when the workspace is a subdirectory.
func excludeState(ctx context.Context, repo *git.Repo, workspace string) error {
	pattern := "/" + contract.StateDir + "/"
	dir := workspace
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	top := repo.Dir
	if resolved, err := filepath.EvalSymlinks(top); err == nil {
		top = resolved
	}
	if rel, err := filepath.Rel(top, dir); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		pattern = "/" + filepath.ToSlash(rel) + pattern
	}
	if err := repo.Exclude(ctx, pattern); err != nil {
		return fmt.Errorf("exclude %s from git: %w", contract.StateDir, err)
	}
	return nil
}

// inspect fills in what the iteration changed in the workspace.
func (a *Agent) inspect(ctx context.Context, repo *git.Repo, in contract.IterationInput, mode contract.Mode, promise string, before tasks.State, startHead, finalText string, res *contract.IterationResult) error {
	after, err := tasks.Load(in.Workspace, mode)
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
		res.StoryID, res.StoryTitle = workedOn(before, after)
	}
	if res.Outcome == contract.OutcomeSuccess && !res.Repair {
		res.CompletionClaimed = tasks.ClaimsCompletion(finalText, promise)
	}

	if err := recordChanges(ctx, repo, startHead, res); err != nil {
		return err
	}

	keep := filepath.Join(in.Workspace, contract.StateDir, "state", safeName(in.Key()), fmt.Sprintf("checkpoint-%04d.json", in.Iteration))
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

// finishCommit commits the iteration's pending changes when asked, once:
// the trailers identify the commit, so a retry finds it instead of
// committing again. Then it keeps the iteration's last commit reachable
// under refs/ralph.
func (a *Agent) finishCommit(ctx context.Context, repo *git.Repo, in contract.IterationInput, res contract.IterationResult, resultFile string) (contract.IterationResult, error) {
	if res.Halt != "" {
		// The work is not where the session's branch is: leave it for a
		// person to sort out rather than commit it somewhere.
		return res, nil
	}
	// A plan that is not valid stays uncommitted for the next planner.
	badPlan := in.RoleOf() == contract.RolePlanner && (res.Plan == nil || !res.Plan.Valid)
	if in.Git.AutoCommit && res.Commit == "" && !badPlan {
		commit, err := repo.FindCommit(ctx, in.Key(), in.Iteration)
		if err != nil {
			return contract.IterationResult{}, fmt.Errorf("look for iteration commit: %w", err)
		}
		if commit == "" {
			pending, err := repo.Status(ctx)
			if err != nil {
				return contract.IterationResult{}, fmt.Errorf("git status: %w", err)
			}
			if len(pending) > 0 {
				commit, err = repo.CommitAll(ctx, commitSubject(in.Iteration, res), commitBody(res), in.Key(), in.Iteration,
					git.TrailerRole+": "+in.RoleOf())
				if err != nil {
					return contract.IterationResult{}, fmt.Errorf("commit iteration %d: %w", in.Iteration, err)
				}
			}
		}
		if commit != "" {
			res.Commit = commit
			res.Head = commit
			if err := saveResult(resultFile, res); err != nil && !slices.Contains(res.Warnings, err.Error()) {
				res.Warnings = append(res.Warnings, err.Error())
			}
		}
	}
	if res.Head != "" {
		ref := iterationRef(in.Key(), in.Iteration)
		if err := repo.SetRef(ctx, ref, res.Head); err != nil {
			return contract.IterationResult{}, fmt.Errorf("keep iteration %d's commit: %w", in.Iteration, err)
		}
		res.Ref = ref
	}
	return res, nil
}

// iterationRef is the ref that keeps an iteration's last commit reachable.
func iterationRef(key string, iteration int) string {
	return fmt.Sprintf("refs/ralph/%s/%d", refName(key), iteration)
}

var refUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// refName turns a key into one valid component of a ref name.
func refName(key string) string {
	return strings.Trim(refUnsafe.ReplaceAllString(key, "-"), "-")
}

// guardHistory checks what the agent did to git: HEAD must still be on
// the session's branch, with the commit the iteration started from among
// its ancestors. A branch left for a detached HEAD or another branch that
// holds the work is moved to the work; a history rewound (git reset
// --hard HEAD~1, a checkout of an older commit) is put back where the
// work was. Both are told to the next iteration. A history that went
// another way than the work (a rebase, an amended commit) halts the
// session, the old line kept under refs/ralph.
func (a *Agent) guardHistory(ctx context.Context, repo *git.Repo, in contract.IterationInput, start string, res *contract.IterationResult) error {
	if start == "" {
		return nil
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return err
	}
	branch, err := repo.Branch(ctx)
	if err != nil {
		return err
	}
	want := in.Branch
	if want == "" {
		// A session that started on a detached HEAD has no branch to
		// keep; only its history is checked.
		want = branch
	}
	where := "detached HEAD"
	if branch != "" {
		where = "branch " + branch
	}
	if head == "" {
		return a.restore(ctx, repo, in, want, start, fmt.Sprintf("the iteration left HEAD on %s, which has no commit", where), res)
	}
	forward, err := repo.IsAncestor(ctx, start, head)
	if err != nil {
		return fmt.Errorf("check history: %w", err)
	}
	switch {
	case forward && branch == want:
		return nil
	case forward:
		// The work is at HEAD, on the wrong branch or none: bring the
		// session's branch to it.
		if want == "" {
			return nil
		}
		tip, err := repo.Resolve(ctx, "refs/heads/"+want)
		if err != nil {
			return fmt.Errorf("check history: %w", err)
		}
		if tip != "" {
			ff, err := repo.IsAncestor(ctx, tip, head)
			if err != nil {
				return fmt.Errorf("check history: %w", err)
			}
			if !ff {
				// Moving the branch would drop its own commits.
				res.Halt = fmt.Sprintf("iteration %d ended on %s at %s, which does not contain the tip %s of the session's branch %s; "+
					"both are kept. Check out %s where the work should go on and start the session again", in.Iteration, where, short(head), short(tip), want, want)
				return nil
			}
		}
		if err := repo.BranchAt(ctx, want, head); err != nil {
			res.Halt = fmt.Sprintf("the agent left branch %s for %s at %s and Ralph could not move %s there: %v", want, where, short(head), want, err)
			return nil
		}
		res.Notices = append(res.Notices, fmt.Sprintf(
			"The last iteration left branch `%s` (HEAD was on %s at %s). Ralph moved `%s` to that commit and checked it out again. Work on `%s` only: do not check out other branches or commits.",
			want, where, short(head), want, want))
		return nil
	}
	back, err := repo.IsAncestor(ctx, head, start)
	if err != nil {
		return fmt.Errorf("check history: %w", err)
	}
	if back {
		return a.restore(ctx, repo, in, want, start, fmt.Sprintf("the iteration moved HEAD back from %s to %s (%s), dropping commits from the history", short(start), short(head), where), res)
	}
	keep := iterationRef(in.Key(), in.Iteration) + "-start"
	if err := repo.SetRef(ctx, keep, start); err != nil {
		return fmt.Errorf("keep the iteration's start commit: %w", err)
	}
	res.Halt = fmt.Sprintf("iteration %d rewrote git history: the commit it started from, %s, is no longer an ancestor of HEAD %s (%s); "+
		"both are kept (%s and HEAD). Choose the line to keep, check out %s on it, and start the session again",
		in.Iteration, short(start), short(head), where, keep, orName(want, "the session's branch"))
	return nil
}

// restore puts branch back at start after the agent rewound history,
// keeping the agent's uncommitted changes, and tells the next iteration.
func (a *Agent) restore(ctx context.Context, repo *git.Repo, in contract.IterationInput, branch, start, what string, res *contract.IterationResult) error {
	var err error
	if branch != "" {
		err = repo.BranchAt(ctx, branch, start)
	} else {
		err = repo.Detach(ctx, start)
	}
	if err != nil {
		keep := iterationRef(in.Key(), in.Iteration) + "-start"
		if rerr := repo.SetRef(ctx, keep, start); rerr != nil {
			return fmt.Errorf("keep the iteration's start commit: %w", rerr)
		}
		res.Halt = fmt.Sprintf("iteration %d: %s, and Ralph could not put %s back at %s (kept as %s): %v", in.Iteration, what, orName(branch, "HEAD"), short(start), keep, err)
		return nil
	}
	res.Notices = append(res.Notices, fmt.Sprintf(
		"The last iteration rewrote git: %s. Ralph put `%s` back at %s, so that no committed work is lost. Never reset, rebase, amend or check out other commits: fix mistakes with new commits on top.",
		what, orName(branch, "HEAD"), short(start)))
	return nil
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func orName(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func commitSubject(iteration int, res contract.IterationResult) string {
	s := fmt.Sprintf("ralph: iteration %d", iteration)
	if res.Plan != nil {
		return fmt.Sprintf("%s: plan %s (%d stories)", s, contract.PRDFile, len(res.Plan.Stories))
	}
	if res.StoryID != "" || res.StoryTitle != "" {
		s += ": " + strings.TrimSpace(res.StoryID+" "+res.StoryTitle)
	}
	return s
}

func commitBody(res contract.IterationResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Outcome: %s", res.Outcome)
	if res.Reason != "" {
		fmt.Fprintf(&b, " (%s)", res.Reason)
	}
	if res.Task.Total > 0 {
		fmt.Fprintf(&b, "\nTasks: %d of %d done in %s", res.Task.Done, res.Task.Total, res.Task.File)
	}
	return b.String()
}

// resumePrompt continues an agent session whose worker died mid-iteration.
const resumePrompt = "You were interrupted: the process running you stopped before you finished. " +
	"Continue the task from where you left off, following the instructions you were given at the start of this conversation. " +
	"Check the working tree first (git status, git diff): some of your edits may already be on disk."

// interruptedNote tells a fresh agent what the dead attempt of its
// iteration left in the working tree.
func interruptedNote(ctx context.Context, repo *git.Repo, startHead string) (string, error) {
	files, err := changedFiles(ctx, repo, startHead)
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "An earlier attempt at this iteration was interrupted before it changed anything. Do the task from the start.", nil
	}
	files = firstFew(files, 30)
	return fmt.Sprintf("An earlier attempt at this iteration was interrupted (the process running it stopped). It left changes in: %s. "+
		"Review them with git status and git diff, keep what is sound, fix or revert the rest, and finish the task.", strings.Join(files, ", ")), nil
}

func (a *Agent) prompt(in contract.IterationInput, mode contract.Mode, promise string, st tasks.State, loadErr error) (string, error) {
	if in.RoleOf() == contract.RolePlanner {
		return a.planPrompt(in), nil
	}
	pin := tasks.PromptInput{
		Mode:              mode,
		State:             st,
		Iteration:         in.Iteration,
		MaxIterations:     in.MaxIterations,
		CompletionPromise: promise,
		Guidance:          in.Guidance,
		Notices:           in.Notices,
		Learnings:         tasks.LoadLearnings(in.Workspace, mode, 8<<10),
		MemoriesFile:      in.Task.MemoriesFile,
		Rules:             in.Task.Rules,
		InstructionsFile:  in.Task.InstructionsFile,
		AgentsFile:        tasks.AgentsFileOf(in.Workspace),
	}
	var err error
	if pin.Instructions, err = tasks.LoadInstructions(in.Workspace, in.Task.InstructionsFile); err != nil {
		return "", temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidTaskFile, err)
	}
	if mode == contract.ModeIssue {
		pin.Learnings = tasks.LoadMemories(in.Task.MemoriesFile, tasks.MemoriesLimit)
	}
	if loadErr != nil {
		if in.RoleOf() == contract.RoleReviewer {
			// Nothing to review against; the reviewer says so.
			return "", invalidTaskFile(loadErr)
		}
		// The agent broke the task file: this iteration repairs it.
		return tasks.BuildRepairPrompt(in.Workspace, pin, loadErr), nil
	}
	if in.RoleOf() == contract.RoleReviewer {
		return tasks.BuildReviewPrompt(in.Workspace, tasks.RoleInput{PromptInput: pin, RoleInstructions: in.RoleInstructions})
	}
	return tasks.BuildPrompt(in.Workspace, pin)
}

// Prompt is the prompt the iteration in would give its agent, built as
// RunIteration builds it, without running anything.
func Prompt(ctx context.Context, in contract.IterationInput) (string, error) {
	mode, promise, err := resolveTask(in.Workspace, in.Task)
	if err != nil {
		return "", err
	}
	st, loadErr := tasks.Load(in.Workspace, mode)
	return (&Agent{}).prompt(in, mode, promise, st, loadErr)
}

func (a *Agent) maxLog() int64 {
	if a.MaxLogBytes > 0 {
		return a.MaxLogBytes
	}
	return DefaultMaxLogBytes
}

func (a *Agent) maxLine() int {
	if a.MaxLineBytes > 0 {
		return a.MaxLineBytes
	}
	return DefaultMaxLineBytes
}

// openWorkspace checks that the workspace exists and is a git work tree.
func openWorkspace(ctx context.Context, dir string) (*git.Repo, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("workspace %s is not accessible: %v", dir, err), contract.ErrTypeInvalidWorkspace, err)
	}
	if !fi.IsDir() {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("workspace %s is not a directory", dir), contract.ErrTypeInvalidWorkspace, nil)
	}
	repo, err := git.Open(ctx, dir)
	if errors.Is(err, git.ErrNotRepository) {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("workspace %s is not a git repository (run git init there first)", dir), contract.ErrTypeInvalidWorkspace, err)
	}
	return repo, err
}

func resolveTask(dir string, t contract.TaskSettings) (contract.Mode, string, error) {
	var mode contract.Mode
	var err error
	if t.Mode != "" {
		mode, err = tasks.ParseMode(t.Mode)
	} else {
		mode, err = tasks.Detect(dir)
	}
	if err != nil {
		return "", "", invalidTaskFile(err)
	}
	promise := t.CompletionPromise
	if promise == "" {
		promise = tasks.DefaultPromise(mode)
	}
	return mode, promise, nil
}

func invalidTaskFile(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidTaskFile, err)
}

func taskState(st tasks.State) contract.TaskState {
	ts := contract.TaskState{
		Mode:       string(st.Mode),
		File:       st.File,
		Total:      st.Total,
		Done:       st.Done,
		Complete:   st.Complete,
		Verifiable: st.Verifiable,
	}
	if next, ok := st.Next(); ok {
		ts.CurrentID, ts.CurrentTitle = next.ID, next.Title
	}
	return ts
}

// workedOn names the story or task an iteration finished, or else the one
// it was asked to do.
func workedOn(before, after tasks.State) (id, title string) {
	was := map[string]bool{}
	for _, it := range before.Items {
		was[it.ID+"\x00"+it.Title] = it.Done
	}
	for _, it := range after.Items {
		if it.Done && !was[it.ID+"\x00"+it.Title] {
			return it.ID, it.Title
		}
	}
	if next, ok := before.Next(); ok {
		return next.ID, next.Title
	}
	return "", ""
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

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, list := range [][]string{a, b} {
		for _, f := range list {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// truncate keeps the last n bytes of s: an agent's conclusion is at the end.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + strings.ToValidUTF8(s[len(s)-n:], "")
}

var unsafeName = strings.NewReplacer("/", "_", "\\", "_", "..", "_", "\x00", "_")

func safeName(s string) string { return unsafeName.Replace(s) }

func loadResult(path string) (contract.IterationResult, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return contract.IterationResult{}, false, nil
	}
	if err != nil {
		return contract.IterationResult{}, false, fmt.Errorf("read recorded result: %w", err)
	}
	var res contract.IterationResult
	if err := json.Unmarshal(data, &res); err != nil {
		// A torn write from a crash: run the iteration again.
		return contract.IterationResult{}, false, nil
	}
	return res, true, nil
}

func saveResult(path string, res contract.IterationResult) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("record result: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("record result: %w", err)
	}
	return nil
}

// readLines calls fn for every line of r without holding more than max
// bytes of one line; longer lines are reported with tooLong and dropped.
func readLines(r io.Reader, max int, fn func(line []byte, tooLong bool)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if !tooLong {
				if len(buf)+len(chunk) > max {
					tooLong = true
					buf = buf[:0]
				} else {
					buf = append(buf, chunk...)
				}
			}
		}
		switch {
		case err == nil || (errors.Is(err, io.EOF) && (len(buf) > 0 || tooLong)):
			if tooLong {
				fn(nil, true)
			} else {
				fn(trimEOL(buf), false)
			}
			buf, tooLong = buf[:0], false
			if err != nil {
				return nil
			}
		case errors.Is(err, bufio.ErrBufferFull):
			// keep reading the same line
		case errors.Is(err, io.EOF), errors.Is(err, os.ErrClosed):
			return nil
		default:
			return fmt.Errorf("read agent output: %w", err)
		}
		if cap(buf) > 1<<20 && len(buf) == 0 {
			buf = nil // let one huge line's buffer go
		}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// cappedWriter writes up to max bytes and then notes the truncation once.
type cappedWriter struct {
	w       io.Writer
	max     int64
	written int64
	capped  bool
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.capped {
		return len(p), nil
	}
	if c.written+int64(len(p)) > c.max {
		c.capped = true
		_, err := fmt.Fprintf(c.w, "{\"type\":\"ralph_log_truncated\",\"after_bytes\":%d}\n", c.written)
		return len(p), err
	}
	n, err := c.w.Write(p)
	c.written += int64(n)
	return len(p), err
}
