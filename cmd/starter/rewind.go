package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/internal/words"
)

// rewindCommand is `starter rewind`.
type rewindCommand struct {
	base
	to          int
	follow      bool
	quiet       bool
	guide       string
	keepChanges bool
}

func (s *rewindCommand) flags(f *pflag.FlagSet) {
	f.IntVar(&s.to, "to", -1, "the iteration to go back to: the session runs on from just after it")
	f.BoolVarP(&s.follow, "follow", "f", false, "print the session as it runs on, until it ends")
	f.BoolVarP(&s.quiet, "quiet", "q", false, "with --follow: one line per iteration")
	f.StringVar(&s.guide, "guide", "", "text for the prompt of the first iteration after the rewind")
	f.BoolVar(&s.keepChanges, "keep-changes", false, "rewind an ended session whose work tree has uncommitted changes: they are committed onto the rewound ref")
}

func (s *rewindCommand) run(cctx *commandContext, args []string) error {
	if s.to < 0 {
		return errors.New("rewind needs --to N: the iteration to go back to (starter log SESSION lists them)")
	}
	conn, tl, err := cctx.openTimeline(s.cmd, args, true)
	if err != nil {
		return err
	}
	defer conn.close()
	id := tl.id
	rw, sig, err := s.plan(cctx, conn, tl)
	if err != nil {
		return err
	}
	next, _ := tl.after(s.to)
	if err := s.reset(cctx, conn, tl, next, sig); err != nil {
		return err
	}
	abandoned := ""
	if a := rw.Abandoned; a.Iterations > 0 {
		abandoned = fmt.Sprintf(" (%s, $%.4f, counted apart)", words.Count(a.Iterations, "iteration"), a.CostUSD)
	}
	fmt.Fprintf(cctx.stdout, "Rewound %s to iteration %d: Temporal reset it to the workflow task that started iteration %d.\n", id, s.to, s.to+1)
	fmt.Fprintf(cctx.stdout, "Its branch goes back to %s; iterations %d to %d%s stay on %s.\n", contract.ShortSHA(rw.Commit), s.to+1, rw.From, abandoned, rw.Ref)
	if !cctx.linkAndHint(conn, id, s.follow, "status", "") {
		return nil
	}
	view, _ := followView(s.quiet, false)
	return cctx.followSession(conn, id, view, false)
}

// plan checks that the rewind can be made and is what it is: iteration
// s.to finished, something ran after it, the work tree holds nothing a
// person would lose, no pull request of it was merged. It returns the
// rewind and the signal that carries it.
func (s *rewindCommand) plan(cctx *commandContext, conn *connection, tl *timeline) (contract.Rewind, contract.RewindSignal, error) {
	var rw contract.Rewind
	if s.to > 0 {
		if _, err := tl.finished(s.to); err != nil {
			return rw, contract.RewindSignal{}, err
		}
	}
	if _, err := tl.after(s.to); err != nil {
		return rw, contract.RewindSignal{}, err
	}
	if err := refuseMergedPull(cctx, conn, tl); err != nil {
		return rw, contract.RewindSignal{}, err
	}
	st, err := query[contract.Status](cctx, conn.client, cctx.waitingForWorker, tl.id)
	if err != nil {
		return rw, contract.RewindSignal{}, cctx.noAnswer(conn, err, "")
	}
	if !tl.running && !s.keepChanges {
		if err := refuseDirty(cctx, st.Workspace); err != nil {
			return rw, contract.RewindSignal{}, err
		}
	}
	after, err := tl.stateAfter(conn, s.to)
	if err != nil {
		return rw, contract.RewindSignal{}, err
	}
	commit, err := tl.commitOf(s.to, after)
	if err != nil {
		return rw, contract.RewindSignal{}, err
	}
	rw = contract.Rewind{
		To: s.to, At: time.Now().UTC(), From: tl.last(), Commit: commit,
		Ref: contract.RewoundRef(tl.id, len(st.Rewound)+1),
		Abandoned: contract.Abandoned{
			Iterations: tl.last() - s.to,
			CostUSD:    max(0, st.Totals.CostUSD-after.Totals.CostUSD),
			Tokens:     max(0, st.Totals.Usage.Total()-after.Totals.Usage.Total()),
		},
		By: currentUser(),
	}
	return rw, contract.RewindSignal{Rewind: rw, Earlier: st.Rewound, Guidance: s.guide}, nil
}

// reset resets the session to the workflow task that scheduled
// iteration next and sends the reset run the rewound signal, which it
// waits for before its first turn. Signals and updates after that point
// are not applied again: the session is as it was then. The request ID
// is the same for the same rewind of the same run, so a retried command
// resets once.
func (s *rewindCommand) reset(cctx *commandContext, conn *connection, tl *timeline, next *timelineIteration, sig contract.RewindSignal) error {
	current := tl.runs[len(tl.runs)-1].runID
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d", tl.id, current, s.to))
	resp, err := conn.client.ResetWorkflowExecution(cctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 conn.namespace,
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: tl.id, RunId: next.runID},
		Reason:                    fmt.Sprintf("starter rewind --to %d by %s: run on from just after iteration %d", s.to, sig.Rewind.By, s.to),
		WorkflowTaskFinishEventId: next.scheduledBy,
		RequestId:                 hex.EncodeToString(sum[:16]),
		ResetReapplyExcludeTypes: []enumspb.ResetReapplyExcludeType{
			enumspb.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL, enumspb.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE,
		},
	})
	if err != nil {
		return fmt.Errorf("reset %s to iteration %d: %w", tl.id, s.to, err)
	}
	sig.RunID = resp.GetRunId()
	for try := 1; ; try++ {
		err = conn.client.SignalWorkflow(cctx, tl.id, sig.RunID, contract.SignalRewound, sig)
		if err == nil || try == 5 {
			break
		}
		time.Sleep(time.Duration(try) * 200 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("%s was reset to iteration %d, but the rewind could not be sent to it, so its branch stays where it was: %w", tl.id, s.to, err)
	}
	return nil
}

// commitOf is the commit iteration n left the branch at; n 0 is the
// commit the session started from, which its state after n (after)
// holds.
func (tl *timeline) commitOf(n int, after contract.CarryOver) (string, error) {
	if n == 0 {
		if after.Prepared.Head == "" {
			return "", fmt.Errorf("the start of %s is not recorded: go back to iteration 1 or later", tl.id)
		}
		return after.Prepared.Head, nil
	}
	it, err := tl.finished(n)
	if err != nil {
		return "", err
	}
	if it.result.Head == "" {
		return "", fmt.Errorf("iteration %d of %s recorded no commit", n, tl.id)
	}
	return it.result.Head, nil
}

// refuseMergedPull refuses to rewind an issue's session whose pull
// request was merged: the work is on the base branch already.
func refuseMergedPull(cctx *commandContext, conn *connection, tl *timeline) error {
	if tl.input.Issue == nil {
		return nil
	}
	st, err := query[contract.FollowStatus](cctx, conn.client, nil, contract.PullRequestID(tl.id))
	if err != nil || st.Reason != contract.ReasonMerged {
		return nil
	}
	return fmt.Errorf("the pull request #%d of %s (issue #%d) was merged: its work is on the base branch, and a rewind cannot take it back; fork the session instead (%s)",
		st.Pull, tl.id, tl.input.Issue.Number, conn.suggest("fork", tl.id, "--at", "N"))
}

// refuseDirty refuses a work tree on this machine with uncommitted
// changes: an ended session's tree holds none of its own, so they are a
// person's.
func refuseDirty(cctx *commandContext, workspace string) error {
	if fi, err := os.Stat(workspace); err != nil || !fi.IsDir() {
		return nil // on another machine: the rewind keeps them on its ref
	}
	repo, err := git.Open(cctx, workspace)
	if err != nil {
		return nil
	}
	dirty, err := repo.Status(cctx)
	if err != nil || len(dirty) == 0 {
		return nil
	}
	shown := dirty
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(dirty)-5))
	}
	return fmt.Errorf("the work tree %s has uncommitted changes (%s): commit or stash them first, or give --keep-changes to keep them on the rewound ref",
		workspace, strings.Join(shown, ", "))
}

// timeTravelRows say what a session was forked or rewound from.
func timeTravelRows(row func(k, format string, args ...any), st contract.Status) {
	if f := st.ForkedFrom; f != nil {
		row("Forked from", "%s at iteration %d (%s, $%.4f spent by then)", f.Session, f.Iteration, contract.ShortSHA(f.Commit), f.CostUSD)
	}
	for _, r := range st.Rewound {
		row("Rewound", "to iteration %d at %s, from %d: %s ($%.4f) left on %s",
			r.To, r.At.Local().Format("2006-01-02 15:04:05"), r.From, words.Count(r.Abandoned.Iterations, "iteration"), r.Abandoned.CostUSD, r.Ref)
	}
	if a := contract.AbandonedTotal(st.Rewound); a.Iterations > 0 {
		row("Abandoned", "$%.4f, %d tokens in %s that rewinds left behind (not in the totals)", a.CostUSD, a.Tokens, words.Count(a.Iterations, "iteration"))
	}
}
