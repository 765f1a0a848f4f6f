package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// listCommand is `starter list`: sessions, issue queues and issue
// sessions with their state, a table or JSON lines.
type listCommand struct {
	base
	status string
	limit  int
	output outputFormat
}

func (s *listCommand) flags(f *pflag.FlagSet) {
	f.StringVar(&s.status, "status", "", "only those in this state (starting, running, waiting_for_agent_slot, host_offline, paused, rate_limited, awaiting_human, completed, stopped, limited, failed; queues: idle, working, budget_wait; pull request followers: waiting_for_checks, waiting_for_review, fixing_ci, addressing_review, updating_branch, merging, waiting_for_merge, finished)")
	f.IntVar(&s.limit, "limit", 50, "at most this many sessions")
	s.output.add(f, "one object a line")
}

func (s *listCommand) run(cctx *commandContext, _ []string) error {
	visibility := "(WorkflowType = 'Session' OR WorkflowType = 'IssueQueue' OR WorkflowType = 'PullRequest' OR WorkflowType = 'ChangeSet')"
	if s.status != "" {
		var names []string
		for _, st := range contract.States() {
			names = append(names, string(st))
		}
		if !slices.Contains(names, s.status) {
			return fmt.Errorf("invalid --status %q: valid states are %s", s.status, strings.Join(names, ", "))
		}
		visibility += fmt.Sprintf(" AND RalphStatus = '%s'", s.status)
	}
	conn, err := cctx.dial(s.cmd)
	if err != nil {
		return err
	}
	defer conn.close()
	docs, err := listWorkflows(cctx, conn.client, visibility, s.limit)
	if err != nil {
		return err
	}
	seen := map[string]*bool{}
	for i, d := range docs {
		running := d.ExecutionStatus == executionStatus(enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
		if d.Kind == "session" && running {
			docs[i].livenessDoc = liveness(cctx, conn, d.Host, seen)
		}
		if d.Kind == "queue" && running {
			// What its issues wait for is in its state, not in the
			// search attributes: a query, with a short deadline.
			qctx, cancel := context.WithTimeout(cctx, 3*time.Second)
			if st, err := query[contract.QueueStatus](qctx, conn.client, nil, d.WorkflowID); err == nil {
				docs[i].Waiting = st.Waiting
			}
			cancel()
		}
	}
	if s.output == outputJSON {
		p := newPrinter(cctx.stdout)
		for _, d := range docs {
			if err := p.print(d); err != nil {
				return err
			}
		}
		return nil
	}
	return printList(cctx.stdout, docs)
}

// listWorkflows lists at most limit workflows that match query.
func listWorkflows(ctx context.Context, c client.Client, query string, limit int) ([]listDoc, error) {
	var docs []listDoc
	var token []byte
	for len(docs) < limit {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: int32(min(limit-len(docs), 100))})
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			docs = append(docs, newListDoc(e))
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	return docs, nil
}

// printList prints docs as list's table. A running session that no
// worker runs shows "no worker" in its state, and the table is followed
// by a line for each host without a worker that says what to do.
func printList(out io.Writer, docs []listDoc) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tEXECUTION\tSTATE\tITERATION\tCOST\tREPO\tHOST\tSTARTED")
	var notes []string
	for _, d := range docs {
		kind := d.Kind
		if d.Issue > 0 {
			kind = fmt.Sprintf("issue #%d", d.Issue)
			if d.Kind == "pull" {
				kind += " pull request"
			}
		}
		state := stateText(contract.State(orDash(d.State)), "")
		if n := len(d.Waiting); n > 0 {
			state += fmt.Sprintf(", %d waiting", n)
			for _, w := range d.Waiting {
				notes = append(notes, fmt.Sprintf("%s: #%d %s", d.WorkflowID, w.Number, w.Text()))
			}
		}
		if d.LivenessNote != "" {
			state += ", no worker"
			if !slices.Contains(notes, d.LivenessNote) {
				notes = append(notes, d.LivenessNote)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n",
			d.WorkflowID, kind, d.ExecutionStatus, state,
			d.Iteration, words.Dollars(d.CostUSD), orDash(d.Repo), orDash(d.Host), d.started.Local().Format(time.DateTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(out, n)
	}
	return nil
}
