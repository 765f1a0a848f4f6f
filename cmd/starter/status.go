package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// statusCommand is `starter status`: everything a session's (or a
// queue's) status query knows, as text or JSON.
type statusCommand struct {
	targeted
	output outputFormat
}

func (s *statusCommand) flags(f *pflag.FlagSet) {
	s.output.add(f, "one object")
	s.targeted.flags(f)
}

func (s *statusCommand) run(cctx *commandContext, args []string) error {
	return cctx.withTarget(s.cmd, s.queue, args, func(conn *connection, id string) error {
		if isQueueID(id) {
			return s.queueStatus(cctx, conn, id)
		}
		if isPullID(id) {
			return s.pullStatus(cctx, conn, id)
		}
		return s.sessionStatus(cctx, conn, id, args)
	})
}

// sessionStatus prints what the session id's status query knows, or the
// result of a session that has ended.
func (s *statusCommand) sessionStatus(cctx *commandContext, conn *connection, id string, args []string) error {
	desc, err := conn.client.DescribeWorkflowExecution(cctx, id, "")
	if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
		if fi, err := os.Stat(orDot(args)); err == nil && fi.IsDir() {
			return fmt.Errorf("no session %s here: start one with %s", id, conn.suggest("run", orDot(args)))
		}
		return fmt.Errorf("no session %s here", id)
	}
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	doc := sessionStatusDoc{workflowDoc: newWorkflowDoc(info), UIURL: conn.lastingURL(id)}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		host := attr(info.GetSearchAttributes().GetIndexedFields(), contract.SearchRalphHost, "")
		doc.livenessDoc = liveness(cctx, conn, host, map[string]*bool{})
	}
	out := cctx.stdout
	return show(cctx, conn, s.output, &doc, desc, func(st contract.Status) {
		printStatus(out, conn, st, doc.ExecutionStatus, doc.UIURL, doc.LivenessNote)
		if tail := liveTail(conn.dataConverter, desc.GetPendingActivities(), termWidth(out)); tail != "" {
			fmt.Fprintln(out)
			fmt.Fprint(out, tail)
		}
	}, func(res contract.SessionResult) {
		fmt.Fprintf(out, "Reason     %s (%s)\nTotals     %s, %s, %s, %s\n",
			res.Reason, res.Message, words.Count(res.Iterations, "iteration"), words.Dollars(res.Totals.CostUSD),
			words.Count(int(res.Totals.Usage.Total()), "token"), words.Count(res.Totals.Commits, "commit"))
	})
}

// queueStatus prints what a queue's status query knows, or the result of
// a queue that has ended.
func (s *statusCommand) queueStatus(cctx *commandContext, conn *connection, id string) error {
	return workflowStatus(cctx, conn, s.output, "queue", id, new(queueStatusDoc), printQueueStatus, printQueueResult)
}

// pullStatus prints what the follower of an issue's pull request knows,
// or how it ended.
func (s *statusCommand) pullStatus(cctx *commandContext, conn *connection, id string) error {
	return workflowStatus(cctx, conn, s.output, "pull request follower", id, new(pullStatusDoc), printPullStatus, printPullResult)
}

// workflowStatus describes the workflow id (a kind, as its errors name
// it), fills doc and shows it as format asks: as text, a status by full,
// the result of one that has ended by result.
func workflowStatus[S, R any](cctx *commandContext, conn *connection, format outputFormat, kind, id string, doc *statusDoc[S, R],
	full func(out io.Writer, st S, execStatus, url string), result func(out io.Writer, res R)) error {
	desc, err := conn.client.DescribeWorkflowExecution(cctx, id, "")
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, id, err)
	}
	doc.workflowDoc, doc.UIURL = newWorkflowDoc(desc.GetWorkflowExecutionInfo()), conn.lastingURL(id)
	out := cctx.stdout
	return show(cctx, conn, format, doc, desc, func(st S) {
		full(out, st, doc.ExecutionStatus, doc.UIURL)
	}, func(res R) {
		result(out, res)
	})
}

// printQueueResult prints how a queue ended.
func printQueueResult(out io.Writer, res contract.QueueResult) {
	fmt.Fprintf(out, "Reason     %s (%s)\nTotals     %d done, %d failed, %d skipped, %s\n",
		res.Reason, res.Message, res.Totals.Done, res.Totals.Failed, res.Totals.Skipped, words.Dollars(res.Totals.CostUSD))
}

// printPullResult prints how the follower of a pull request ended.
func printPullResult(out io.Writer, res contract.FollowResult) {
	fmt.Fprintf(out, "Reason     %s (%s)\nRounds     %d fix, %d review, %d update; %s, %s\n",
		res.Reason, res.Message, res.FixRounds, res.ReviewRounds, res.UpdateRounds, words.Count(res.Iterations, "iteration"), words.Dollars(res.CostUSD))
}

// isPullID reports whether id is the follower of an issue's pull request.
func isPullID(id string) bool { return strings.HasSuffix(id, "/pr") }

func printPullStatus(out io.Writer, st contract.FollowStatus, execStatus, url string) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("Pull", "#%d of %s#%d %s", st.Pull, st.Repo, st.Issue, st.PullURL)
	state := string(st.State)
	if st.Reason != "" {
		state += " (" + string(st.Reason) + ")"
	}
	row("State", "%s; execution %s", state, execStatus)
	if st.Waiting != "" {
		row("Waiting", "%s", st.Waiting)
	}
	if st.Message != "" {
		row("Message", "%s", st.Message)
	}
	if st.Head != "" {
		c := st.Checks
		row("Head", "%s: %s, %d passed, %d failed, %d pending", contract.ShortSHA(st.Head), words.Count(c.Total, "check"), c.Passed, len(c.Failed), len(c.Pending))
	}
	row("Rounds", "%d fix, %d review, %d update; %s, %s; %s", st.FixRounds, st.ReviewRounds, st.UpdateRounds,
		words.Count(st.Iterations, "iteration"), words.Dollars(st.CostUSD), words.Count(st.Requests, "GitHub request"))
	if url != "" {
		row("UI", "%s", url)
	}
	tw.Flush()
	printIgnored(out, "Ignored comments (they reach no prompt):", st.Ignored)
	if len(st.Events) > 0 {
		fmt.Fprintln(out, "\nStory:")
		for _, e := range st.Events {
			fmt.Fprintf(out, "  %s %s\n", e.At.Local().Format(time.DateTime), e.Text)
		}
	}
}

// printIgnored prints the ignored comments, if any, under title.
func printIgnored(out io.Writer, title string, ignored []contract.Ignored) {
	if len(ignored) == 0 {
		return
	}
	fmt.Fprintln(out, "\n"+title)
	for _, ig := range ignored {
		fmt.Fprintf(out, "  %s %d by @%s: %s\n", contract.FeedbackNoun(ig.Kind), ig.ID, ig.Author, ig.Why)
	}
}

// show asks the workflow of desc its status (fill) and prints doc as -o
// asks. As text, a status that came back is printed by full; without one,
// the workflow's kind, ID and execution, then for one that has ended its
// result (printed by result) or its failure.
func show[S, R any](cctx *commandContext, conn *connection, format outputFormat, doc *statusDoc[S, R],
	desc *workflowservice.DescribeWorkflowExecutionResponse, full func(S), result func(R)) error {
	qerr := fill(cctx, conn, doc, desc)
	if format == outputJSON {
		if err := newPrinter(cctx.stdout).print(doc); err != nil {
			return err
		}
		return qerr
	}
	if doc.Status != nil {
		full(*doc.Status)
		return nil
	}
	kind := strings.ToUpper(doc.Kind[:1]) + doc.Kind[1:]
	fmt.Fprintf(cctx.stdout, "%-11s%s\nExecution  %s\n", kind, doc.WorkflowID, doc.ExecutionStatus)
	switch {
	case qerr != nil:
		return qerr
	case doc.Result == nil:
		fmt.Fprintf(cctx.stdout, "Failure    %s\n", doc.Failure)
	default:
		result(*doc.Result)
	}
	return nil
}

// fill asks the workflow of desc its status query, waiting out a
// worker's handover (ask). A query needs a worker; a finished workflow's
// result is in its history and needs none, so when no answer comes, an
// ended workflow gets its result or failure instead. A running one's
// query error is returned, with why no answer came (noAnswer).
func fill[S, R any](cctx *commandContext, conn *connection, doc *statusDoc[S, R], desc *workflowservice.DescribeWorkflowExecutionResponse) error {
	st, qerr := query[S](cctx, conn.client, cctx.waitingForWorker, doc.WorkflowID)
	if qerr == nil {
		doc.Status = &st
		doc.RunningIteration = newIterationDoc(conn.dataConverter, desc.GetPendingActivities())
		return nil
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return cctx.noAnswer(conn, qerr, doc.LivenessNote)
	}
	var res R
	if err := conn.client.GetWorkflow(cctx, doc.WorkflowID, "").Get(cctx, &res); err != nil {
		doc.Failure = cctx.explain(err)
		return nil
	}
	doc.Result = &res
	return nil
}

// printStatus prints a session's status as status shows it: a table,
// then what waits for a person and what happened last. A non-empty
// noWorker says that no worker runs the session (noWorkerNote).
func printStatus(out io.Writer, conn *connection, st contract.Status, execStatus, url, noWorker string) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	sessionRows(row, st, execStatus, noWorker)
	counterRows(row, st)
	if url != "" {
		row("UI", "%s", url)
	}
	if st.HumanWait > 0 {
		row("Human wait", "%s (not counted against the runtime limit)", st.HumanWait.Round(time.Second))
	}
	if st.IgnoredAnswers > 0 {
		row("Ignored", "%s that matched no pending checkpoint", words.Count(st.IgnoredAnswers, "checkpoint signal"))
	}
	for _, u := range st.Undelivered {
		row("Undelivered", "%s notification %q: %s", u.Event, u.Text, strings.Join(u.GaveUp, "; "))
	}
	if st.DroppedGuidance > 0 {
		row("Dropped", "%s, the oldest, while more than %d waited for a prompt", words.Count(st.DroppedGuidance, "guidance text"), contract.GuidanceLimit)
	}
	tw.Flush()
	if cp := st.Pending; cp != nil {
		printPending(out, conn, st.SessionID, cp)
	}
	printIgnored(out, "Comments on the issue that cannot answer (no write access):", st.Ignored)
	printHistory(out, st)
}

// sessionRows are the rows of what the session is and does.
func sessionRows(row func(k, format string, args ...any), st contract.Status, execStatus, noWorker string) {
	row("Session", "%s", st.SessionID)
	if st.Host != "" {
		row("Workspace", "%s on host %s", st.Workspace, st.Host)
	} else {
		row("Workspace", "%s", st.Workspace)
	}
	if wt := st.Worktree; wt != nil {
		row("Work tree", "%s of %s, on branch %s (starter clean %s removes it)", wt.Name, wt.Clone, wt.Branch(), wt.Name)
	}
	row("State", "%s; execution %s", withLiveness(sessionState(st), st.State, noWorker), execStatus)
	running := ""
	if st.Running {
		running = " (running)"
		if st.Role != "" {
			running = " (running: the " + st.Role + ")"
		}
	}
	row("Iteration", "%d of %d%s", st.Iteration, st.Limits.MaxIterations, running)
	if st.Roles != "" {
		roles := st.Roles
		if st.ReviewPending {
			roles += "; a completion claim waits for the reviewer"
		}
		row("Roles", "%s", roles)
	}
	if st.Mode != "" {
		task := st.Mode
		if st.Task.File != "" {
			task += fmt.Sprintf(": %s, %d of %d done", st.Task.File, st.Task.Done, st.Task.Total)
		}
		if st.Task.CurrentID != "" || st.Task.CurrentTitle != "" {
			task += "; next " + strings.TrimSpace(st.Task.CurrentID+" "+st.Task.CurrentTitle)
		}
		row("Task", "%s", task)
	}
	if st.Branch != "" {
		row("Branch", "%s", st.Branch)
	}
	timeTravelRows(row, st)
}

// sessionState is the State row of a session.
func sessionState(st contract.Status) string {
	state := stateText(st.State, st.Reason)
	switch st.State {
	case contract.StateHostOffline:
		state += fmt.Sprintf(": no worker of host %s takes its work; it waits, losing nothing, until one runs there again", st.Host)
	case contract.StateWaitingForAgentSlot:
		state += ": its worker already runs worker.max-agents agents"
	}
	if st.Reason != "" {
		state += " (" + string(st.Reason) + ")"
	}
	if st.StopRequested && st.Reason == "" {
		state += ", stop requested"
	}
	return state
}

// withLiveness is the State row's state when noWorker says that no worker
// runs the session: the note instead of a plain running, after any other
// state (host_offline says it already).
func withLiveness(state string, st contract.State, noWorker string) string {
	switch {
	case noWorker == "" || st == contract.StateHostOffline:
		return state
	case st == contract.StateRunning:
		return noWorker
	}
	return state + "; " + noWorker
}

// byBackend is the cost split by backend, "; claude $0.5000, codex
// $1.2000", in a session with agent.fallback; "" otherwise.
func byBackend(costs map[string]float64) string {
	if len(costs) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(costs))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " " + words.Dollars(costs[n])
	}
	return "; " + strings.Join(parts, ", ")
}

// counterRows are the rows of what the session spent, against its
// limits.
func counterRows(row func(k, format string, args ...any), st contract.Status) {
	cost := words.Dollars(st.Totals.CostUSD)
	if st.Limits.MaxCostUSD > 0 {
		cost += fmt.Sprintf(" of $%.2f", st.Limits.MaxCostUSD)
	}
	if n := st.Totals.CostUnknown; n > 0 {
		cost += fmt.Sprintf("; %s of unknown cost not counted (see agent.prices)", words.Count(n, "iteration"))
	}
	row("Cost", "%s%s", cost, byBackend(st.Totals.CostByBackend))
	u := st.Totals.Usage
	row("Tokens", "%d (input %d, output %d, cache read %d, cache write %d)", u.Total(), u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)
	row("Turns", "%d", st.Totals.Turns)
	row("Commits", "%d", st.Totals.Commits)
	end := time.Now()
	if !st.EndedAt.IsZero() {
		end = st.EndedAt
	}
	runtime := end.Sub(st.StartedAt).Round(time.Second).String()
	if st.Limits.MaxRuntime > 0 {
		runtime += " of " + st.Limits.MaxRuntime.String()
	}
	row("Runtime", "%s (started %s)", runtime, st.StartedAt.Local().Format(time.DateTime))
	row("Failures", "%d total, %d in a row (limit %d)", st.Totals.Failures, st.ConsecutiveFailures, st.Limits.MaxConsecutiveFailures)
	row("No progress", "%d in a row (limit %d)", st.NoProgress, st.Limits.MaxNoProgress)
	if st.Totals.RateLimitWaits > 0 {
		row("Rate limits", "%s hit", words.Count(st.Totals.RateLimitWaits, "usage limit"))
	}
	if f := st.Fallback; f != nil {
		row("Fallback", "running on %s until %s's usage limit resets (%s)", f.Backend, f.Instead, f.Until.Local().Format(time.DateTime))
	}
	row("Runs", "%d (continue-as-new every %d iterations)", st.Runs, st.Limits.IterationsPerRun)
}

// printPending prints the checkpoint cp the session id waits on and how
// to answer it.
func printPending(out io.Writer, conn *connection, id string, cp *contract.Checkpoint) {
	fmt.Fprintf(out, "\nWaiting for a human: checkpoint %s (%s, asked in iteration %d, %s ago)\n",
		cp.ID, cp.Type, cp.Iteration, time.Since(cp.AskedAt).Round(time.Second))
	fmt.Fprintf(out, "  %s\n", strings.ReplaceAll(cp.Question, "\n", "\n  "))
	for i, o := range cp.Options {
		fmt.Fprintf(out, "  %d. %s\n", i+1, o)
	}
	if cp.Context != "" {
		fmt.Fprintf(out, "  Context: %s\n", strings.ReplaceAll(cp.Context, "\n", "\n  "))
	}
	if !cp.Deadline.IsZero() {
		fmt.Fprintf(out, "  Times out at %s\n", cp.Deadline.Local().Format(time.DateTime))
	}
	fmt.Fprintf(out, "Answer with one of:\n")
	respond := conn.suggest("respond", id, "--checkpoint", cp.ID)
	fmt.Fprintf(out, "  %s --approve\n", respond)
	fmt.Fprintf(out, "  %s --reject --reason \"...\"\n", respond)
	fmt.Fprintf(out, "  %s --answer \"...\"\n", respond)
	fmt.Fprintf(out, "or send the %q signal from the Temporal UI with {\"id\": %q, \"answer\": \"...\"}\n", contract.SignalCheckpoint, cp.ID)
}

// Bounds of the guidance status prints: the last few texts, each cut to
// a line or two. The prompt gets them whole.
const (
	guidanceShown = 5
	guidanceClip  = 160
)

// printHistory prints the guidance waiting for the next prompt (the
// last guidanceShown texts, each cut to guidanceClip bytes on one line),
// the answered checkpoints and the recent iterations.
func printHistory(out io.Writer, st contract.Status) {
	if len(st.Guidance) > 0 {
		fmt.Fprintln(out, "\nGuidance for the next iteration:")
		older := max(len(st.Guidance)-guidanceShown, 0)
		for _, g := range st.Guidance[older:] {
			fmt.Fprintf(out, "  - %s\n", words.Clip(g, guidanceClip))
		}
		if older > 0 {
			fmt.Fprintf(out, "  and %d more, sent before these (status -o json has them all)\n", older)
		}
	}
	if len(st.Answered) > 0 {
		fmt.Fprintln(out, "\nAnswered checkpoints:")
		for _, a := range st.Answered {
			line := fmt.Sprintf("  %s (iteration %d): %s", a.Checkpoint.ID, a.Checkpoint.Iteration, answerText(a))
			if t := strings.TrimSpace(a.Answer.Answer + " " + a.Answer.Reason); t != "" {
				line += ": " + t
			}
			fmt.Fprintln(out, line)
		}
	}
	if len(st.Recent) > 0 {
		fmt.Fprintln(out, "\nRecent iterations:")
		for _, it := range st.Recent {
			fmt.Fprintln(out, "  "+it.Line())
		}
	}
}

// answerText says how a checkpoint was answered.
func answerText(a contract.AnsweredCheckpoint) string {
	switch {
	case a.TimedOut:
		return "timed out"
	case a.Answer.Approve:
		return "approved"
	case a.Answer.Reject:
		return "rejected"
	}
	return "answered"
}

// printQueueStatus prints a queue's status as status shows it.
func printQueueStatus(out io.Writer, st contract.QueueStatus, execStatus, url string) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("Queue", "%s", st.QueueID)
	row("Repository", "%s (clone %s)", st.Repo, st.Clone)
	row("State", "%s; execution %s", queueState(st), execStatus)
	if st.Message != "" {
		row("Message", "%s", st.Message)
	}
	row("Issues", "labelled %q, pull requests to %s", st.Label, st.BaseBranch)
	t := st.Totals
	row("Totals", "%d done, %d failed, %d skipped; %s, %s", t.Done, t.Failed, t.Skipped, words.Count(t.Iterations, "iteration"), words.Dollars(t.CostUSD))
	if len(st.Followers) > 0 || t.Merged+t.Closed > 0 {
		following := "none"
		if len(st.Followers) > 0 {
			var ids []string
			for _, f := range st.Followers {
				ids = append(ids, fmt.Sprintf("#%d (starter status %s)", f.Issue, f.WorkflowID))
			}
			following = strings.Join(ids, ", ")
		}
		row("Pull requests", "%d merged, %d closed; following %s", t.Merged, t.Closed, following)
	}
	row("Limits", "%s", queueLimits(st.Settings))
	if st.Budget != "" {
		row("Budget", "%s", st.Budget)
	}
	if !st.NextPollAt.IsZero() {
		row("Next poll", "%s (starter poke %s looks now)", st.NextPollAt.Local().Format(time.DateTime), st.QueueID)
	}
	row("Runs", "%d (a fresh one after each issue, continue-as-new)", st.Runs)
	if n := st.Settings.Slots(); n > 1 {
		row("Parallel", "%d issues at once; %d worked on now", n, len(st.Working))
	}
	if url != "" {
		row("UI", "%s", url)
	}
	tw.Flush()
	working := st.Working
	if c := st.Current; c != nil {
		working = append([]contract.CurrentIssue{*c}, working...)
	}
	for _, c := range working {
		printWorking(out, c)
	}
	printQueueHistory(out, st)
}

// printWorking prints an issue the queue works on.
func printWorking(out io.Writer, c contract.CurrentIssue) {
	fmt.Fprintf(out, "\nWorking on #%d %s (%s, for %s)\n", c.Number, c.Title, c.Phase, time.Since(c.StartedAt).Round(time.Second))
	if c.Workflow != "" {
		// A change set's: its repositories have sessions of their own.
		fmt.Fprintf(out, "  workflow %s (starter change-set status shows its repositories)\n", c.Workflow)
	} else {
		fmt.Fprintf(out, "  session %s, branch %s\n", c.SessionID, c.Branch)
	}
	if c.Worktree != "" {
		fmt.Fprintf(out, "  work tree %s\n", c.Worktree)
	}
	for _, it := range c.Iterations {
		fmt.Fprintln(out, "  "+it.Line())
	}
}

// printQueueHistory prints a queue's standing guidance, recent issues and
// skipped issues.
func printQueueHistory(out io.Writer, st contract.QueueStatus) {
	if len(st.Guidance) > 0 {
		fmt.Fprintln(out, "\nStanding guidance for every later issue (withdraw with: starter guide --withdraw N):")
		for i, g := range st.Guidance {
			fmt.Fprintf(out, "  %d. %s\n", i+1, g)
		}
	}
	if len(st.Recent) > 0 {
		fmt.Fprintln(out, "\nRecent issues:")
		for _, o := range st.Recent {
			line := fmt.Sprintf("  #%d %s: %s, %s, %s", o.Number, o.Title, o.Reason, words.Count(o.Iterations, "iteration"), words.Dollars(o.CostUSD))
			if o.PR != 0 {
				line += fmt.Sprintf(", PR #%d %s", o.PR, o.PRURL)
			} else if o.Message != "" {
				line += " (" + o.Message + ")"
			}
			fmt.Fprintln(out, line)
		}
	}
	if len(st.Waiting) > 0 {
		fmt.Fprintln(out, "\nWaiting (ready, not taken yet):")
		for _, w := range st.Waiting {
			fmt.Fprintf(out, "  #%d %s: %s\n", w.Number, w.Title, w.Text())
		}
	}
	if len(st.Skipped) > 0 {
		fmt.Fprintln(out, "\nSkipped (not taken, not commented on):")
		for _, s := range st.Skipped {
			fmt.Fprintf(out, "  #%d %s: %s\n", s.Number, s.Title, s.Reason)
		}
	}
}

// stateText is how a state reads: a session a limit ended is stopped by
// the limit, not failed (also for sessions of earlier versions, which
// said failed).
func stateText(st contract.State, reason contract.Reason) string {
	switch {
	case st == contract.StateLimited:
		return "stopped by limit"
	case st == contract.StateFailed && reason.ExitCode() == 2:
		return "stopped by limit"
	}
	return string(st)
}

// orDot is the workspace argument of args, or ".".
func orDot(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return "."
}
