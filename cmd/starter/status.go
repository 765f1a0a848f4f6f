package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/durable-ralph/ralph/contract"
)

func queryStatus(ctx context.Context, c client.Client, id string) (contract.Status, error) {
	v, err := c.QueryWorkflow(ctx, id, "", contract.QueryStatus)
	if err != nil {
		return contract.Status{}, fmt.Errorf("query status of %s: %w", id, err)
	}
	var st contract.Status
	if err := v.Get(&st); err != nil {
		return contract.Status{}, fmt.Errorf("decode status of %s: %w", id, err)
	}
	return st, nil
}

func newStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status [DIR|ID]",
		Short: "Show everything a session's status query knows",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, conn, started, err := dial(cmd)
			if err != nil {
				return err
			}
			defer conn.close()
			id, err := targetID(cmd, conn.client, cfg.Worker.HostID, args)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if isQueueID(id) {
				return queueStatus(cmd.Context(), conn, id, cfg.TaskQueue, started, out)
			}
			desc, err := conn.client.DescribeWorkflowExecution(cmd.Context(), id, "")
			var notFound *serviceerror.NotFound
			if errors.As(err, &notFound) {
				if fi, err := os.Stat(orDot(args)); err == nil && fi.IsDir() {
					return fmt.Errorf("no session %s here: start one with %s", id, suggest("run", orDot(args)))
				}
				return fmt.Errorf("no session %s here", id)
			}
			if err != nil {
				return fmt.Errorf("session %s: %w", id, err)
			}
			info := desc.GetWorkflowExecutionInfo()
			qctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			st, qerr := queryStatus(qctx, conn.client, id)
			if qerr != nil {
				// A query needs a worker; a finished session's result is
				// in its history and needs none.
				fmt.Fprintf(out, "Session    %s\nExecution  %s\n", id, executionStatus(info.GetStatus()))
				if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
					return fmt.Errorf("%w (is a worker running for task queue %q?)", qerr, cfg.TaskQueue)
				}
				var res contract.SessionResult
				if err := conn.client.GetWorkflow(cmd.Context(), id, "").Get(cmd.Context(), &res); err != nil {
					fmt.Fprintf(out, "Failure    %s\n", failureMessage(err))
					return nil
				}
				fmt.Fprintf(out, "Reason     %s (%s)\nTotals     %d iterations, $%.4f, %d tokens, %d commits\n",
					res.Reason, res.Message, res.Iterations, res.Totals.CostUSD, res.Totals.Usage.Total(), res.Totals.Commits)
				return nil
			}
			url := conn.workflowURL(id)
			if started {
				url = "" // this command's server is gone when it exits
			}
			printStatus(out, st, executionStatus(info.GetStatus()), url)
			if tail := liveTail(conn.dataConverter, desc.GetPendingActivities(), termWidth(out)); tail != "" {
				fmt.Fprintln(out)
				fmt.Fprint(out, tail)
			}
			return nil
		},
	}
}

func executionStatus(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

func printStatus(out io.Writer, st contract.Status, execStatus, url string) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("Session", "%s", st.SessionID)
	if st.Host != "" {
		row("Workspace", "%s on host %s", st.Workspace, st.Host)
	} else {
		row("Workspace", "%s", st.Workspace)
	}
	if wt := st.Worktree; wt != nil {
		row("Work tree", "%s of %s, on branch %s (starter clean %s removes it)", wt.Name, wt.Clone, wt.Branch(), wt.Name)
	}
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
	row("State", "%s; execution %s", state, execStatus)
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
	cost := fmt.Sprintf("$%.4f", st.Totals.CostUSD)
	if st.Limits.MaxCostUSD > 0 {
		cost += fmt.Sprintf(" of $%.2f", st.Limits.MaxCostUSD)
	}
	if n := st.Totals.CostUnknown; n > 0 {
		cost += fmt.Sprintf("; %s of unknown cost not counted (see agent.prices)", plural(n, "iteration"))
	}
	row("Cost", "%s", cost)
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
		row("Rate limits", "%d waits", st.Totals.RateLimitWaits)
	}
	row("Runs", "%d (continue-as-new every %d iterations)", st.Runs, st.Limits.IterationsPerRun)
	if url != "" {
		row("UI", "%s", url)
	}
	if st.HumanWait > 0 {
		row("Human wait", "%s (not counted against the runtime limit)", st.HumanWait.Round(time.Second))
	}
	if st.IgnoredAnswers > 0 {
		row("Ignored", "%d checkpoint signals that matched no pending checkpoint", st.IgnoredAnswers)
	}
	tw.Flush()
	if cp := st.Pending; cp != nil {
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
		respond := suggest("respond", st.SessionID, "--checkpoint", cp.ID)
		fmt.Fprintf(out, "  %s --approve\n", respond)
		fmt.Fprintf(out, "  %s --reject --reason \"...\"\n", respond)
		fmt.Fprintf(out, "  %s --answer \"...\"\n", respond)
		fmt.Fprintf(out, "or send the %q signal from the Temporal UI with {\"id\": %q, \"answer\": \"...\"}\n", contract.SignalCheckpoint, cp.ID)
	}
	if len(st.Guidance) > 0 {
		fmt.Fprintln(out, "\nGuidance for the next iteration:")
		for _, g := range st.Guidance {
			fmt.Fprintf(out, "  - %s\n", g)
		}
	}
	if len(st.Answered) > 0 {
		fmt.Fprintln(out, "\nAnswered checkpoints:")
		for _, a := range st.Answered {
			what := "timed out"
			switch {
			case a.TimedOut:
			case a.Answer.Approve:
				what = "approved"
			case a.Answer.Reject:
				what = "rejected"
			default:
				what = "answered"
			}
			line := fmt.Sprintf("  %s (iteration %d): %s", a.Checkpoint.ID, a.Checkpoint.Iteration, what)
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

func newListCmd() *cobra.Command {
	var status string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions, issue queues and issue sessions with their state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			query := "(WorkflowType = 'Session' OR WorkflowType = 'IssueQueue')"
			if status != "" {
				var names []string
				for _, st := range contract.States() {
					names = append(names, string(st))
				}
				if !slices.Contains(names, status) {
					return fmt.Errorf("invalid --status %q: valid states are %s", status, strings.Join(names, ", "))
				}
				query += fmt.Sprintf(" AND RalphStatus = '%s'", status)
			}
			_, conn, _, err := dial(cmd)
			if err != nil {
				return err
			}
			defer conn.close()
			return listSessions(cmd.Context(), conn.client, query, limit, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only those in this state (starting, running, waiting_for_agent_slot, host_offline, paused, rate_limited, awaiting_human, completed, stopped, limited, failed; queues: idle, working)")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many sessions")
	return cmd
}

func listSessions(ctx context.Context, c client.Client, query string, limit int, out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tEXECUTION\tSTATE\tITERATION\tCOST\tREPO\tHOST\tSTARTED")
	var token []byte
	n := 0
	for n < limit {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: int32(min(limit-n, 100))})
		if err != nil {
			return fmt.Errorf("list sessions: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			fields := e.GetSearchAttributes().GetIndexedFields()
			kind := "session"
			if e.GetType().GetName() == contract.WorkflowIssueQueue {
				kind = "queue"
			} else if n := attr[int64](fields, contract.SearchRalphIssue.GetName(), 0); n > 0 {
				kind = fmt.Sprintf("issue #%d", n)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				e.GetExecution().GetWorkflowId(), kind,
				executionStatus(e.GetStatus()),
				stateText(contract.State(attr[string](fields, contract.SearchRalphStatus.GetName(), "-")), ""),
				fmt.Sprint(attr[int64](fields, contract.SearchRalphIteration.GetName(), 0)),
				fmt.Sprintf("$%.4f", attr[float64](fields, contract.SearchRalphCostUSD.GetName(), 0)),
				attr[string](fields, contract.SearchRalphRepo.GetName(), "-"),
				attr[string](fields, contract.SearchRalphHost.GetName(), "-"),
				e.GetStartTime().AsTime().Local().Format(time.DateTime))
			n++
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	return tw.Flush()
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

func attr[T any](fields map[string]*commonpb.Payload, name string, def T) T {
	p, ok := fields[name]
	if !ok {
		return def
	}
	var v T
	if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
		return def
	}
	return v
}

func newStopCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "stop [DIR|ID]",
		Short: "Let the current iteration (a queue: issue) finish, then end as stopped",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(cmd, args, func(ctx context.Context, c client.Client, id string, out io.Writer) error {
				if err := c.SignalWorkflow(ctx, id, "", contract.SignalStop, contract.StopSignal{Reason: reason}); err != nil {
					return fmt.Errorf("stop session %s: %w", id, err)
				}
				if isQueueID(id) {
					fmt.Fprintf(out, "Stop requested for %s: it ends after the current issue.\n", id)
				} else {
					fmt.Fprintf(out, "Stop requested for %s: it ends after the current iteration.\n", id)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the session is stopped (recorded in its result)")
	return cmd
}

// orDot is the workspace argument of args, or ".".
func orDot(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return "."
}
