package issue

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/session"
)

// Bounds and files of an issue's session.
const (
	// recentLimit bounds the iterations the progress comment lists.
	recentLimit = 10
	// memoriesFile is the clone's learnings file shared by all issues.
	memoriesFile = ".ralph/memories.md"
)

// runSession runs the issue's child session and relays its iterations to
// the progress comment.
func (w *Work) runSession(ctx workflow.Context, wt contract.WorktreeResult) (contract.SessionResult, error) {
	cur := w.cur
	// The session's settings, commands included, are those queue resolved
	// from the clone (and its trust) when the queue started: nothing reads
	// a ralph.yaml of the issue's branch (config's
	// TestIssueWorkReadsNoSettings holds that).
	in := w.sessionInput(cur, wt)
	in.NotifyParent = true
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            cur.SessionID,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// Stopping the queue lets the issue finish; terminating it
		// cancels the issue's session, which kills its agent.
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		TypedSearchAttributes: temporal.NewSearchAttributes(ChildAttributes(w.Settings, w.Session.Host, cur.Number)...),
		StaticSummary:         fmt.Sprintf("#%d %s", cur.Number, words.Clip(cur.Title, 60)),
	})
	child := workflow.ExecuteChildWorkflow(cctx, session.Session, in)
	var fut workflow.Future = child
	if err := child.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		var running *temporal.ChildWorkflowExecutionAlreadyStartedError
		if !errors.As(err, &running) || workflow.GetVersion(ctx, versionAttachSession, workflow.DefaultVersion, 1) < 1 {
			return contract.SessionResult{}, fmt.Errorf("start the session %s: %w", cur.SessionID, err)
		}
		// An earlier start of this issue is still running (a queue that
		// was terminated or reset while it worked): wait for that one
		// rather than run the issue twice.
		w.event(ctx, fmt.Sprintf("#%d: session %s is already running: attached to it", cur.Number, cur.SessionID))
		fut = workflow.ExecuteActivity(awaitOptions(ctx, cur.SessionID), contract.ActivityAwaitSession, cur.SessionID)
	} else {
		w.event(ctx, fmt.Sprintf("#%d: session %s started on %s", cur.Number, cur.SessionID, cur.Branch))
	}

	var res contract.SessionResult
	var err error
	done := false
	workflow.Go(ctx, func(gctx workflow.Context) {
		err = fut.Get(gctx, &res)
		done = true
	})
	for {
		if aerr := workflow.Await(ctx, func() bool { return done || len(*w.Owner.Progress()) > 0 }); aerr != nil {
			return res, aerr
		}
		if len(*w.Owner.Progress()) > 0 {
			w.takeProgress(ctx)
			w.comment(ctx, "")
			continue
		}
		break
	}
	w.Owner.Drain(ctx)
	// The session's last report may arrive after its result: the result
	// carries the last iteration too.
	if res.Last != nil {
		seen := false
		for _, p := range *w.Owner.Progress() {
			seen = seen || p.Iteration.Iteration == res.Last.Iteration
		}
		for _, it := range cur.Iterations {
			seen = seen || it.Iteration == res.Last.Iteration
		}
		if !seen {
			pending := w.Owner.Progress()
			*pending = append(*pending, contract.SessionProgress{SessionID: cur.SessionID, Iteration: *res.Last})
		}
	}
	w.takeProgress(ctx)
	return res, err
}

// sessionInput is the input of a session on the work tree wt of issue
// cur: the queue's template, in issue mode, asking its checkpoints on the
// issue.
func (w *Work) sessionInput(cur *contract.CurrentIssue, wt contract.WorktreeResult) contract.SessionInput {
	return SessionFor(w.Settings, w.Session, w.Preflight.Login, w.Owner.Guidance(), cur.Number, cur.LabeledBy, wt.Dir)
}

// SessionFor is the input of a session that works on issue (or pull
// request) number of the queue of settings s in its work tree dir: the
// queue's session template tmpl in issue mode, the queue's rules, the
// clone's memories; self is the login the worker writes as, by who asked.
func SessionFor(s contract.QueueSettings, tmpl contract.SessionInput, self string, rules []string, number int, by, dir string) contract.SessionInput {
	in := tmpl
	in.Workspace = dir
	in.Repo = s.Repo.FullName()
	in.CarryOver = nil
	in.Git.AllowDirty = true // the work tree is Ralph's own: leftovers are an earlier attempt's work
	in.Issue = &contract.IssueLink{Repo: s.Repo, Number: number, LabeledBy: by, Self: self, PollInterval: s.PollInterval}
	in.Task = contract.TaskSettings{
		Mode:         string(contract.ModeIssue),
		CheckCommand: tmpl.Task.CheckCommand,
		MemoriesFile: filepath.Join(s.Clone, memoriesFile),
		Rules:        append([]string(nil), rules...),
	}
	return in
}

// versionAttachSession is the change ID of attaching to an issue's
// session that is already running instead of failing the issue.
const versionAttachSession = "attach-running-session"

// awaitOptions are the activity options of AwaitSession: it lasts as long
// as the session, heartbeating, and a new attempt simply waits again.
func awaitOptions(ctx workflow.Context, id string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 24 * time.Hour,
		HeartbeatTimeout:    time.Minute,
		WaitForCancellation: true,
		Summary:             "wait for the running session " + id,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: []string{contract.ErrTypeSessionEnded},
		},
	})
}

// takeProgress folds the session's iteration reports into the current
// issue.
func (w *Work) takeProgress(ctx workflow.Context) {
	cur := w.cur
	for _, p := range *w.Owner.Progress() {
		if p.SessionID != cur.SessionID {
			continue
		}
		it := p.Iteration
		cur.Iterations = append(cur.Iterations, it)
		if n := len(cur.Iterations); n > recentLimit {
			cur.Iterations = append([]contract.IterationSummary(nil), cur.Iterations[n-recentLimit:]...)
		}
		w.event(ctx, fmt.Sprintf("#%d %s", cur.Number, it.Line()))
	}
	*w.Owner.Progress() = nil
}
