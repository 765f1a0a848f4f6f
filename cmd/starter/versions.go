package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/durable-ralph/ralph/contract"
)

// versionsCommand is `starter versions`: for each change of the workflow
// code that runs recorded before it replay on a branch of their own
// (contract.Changes), the open runs that started before it shipped and
// may still take that branch. A change none lists can have its old
// branches removed (docs/durability.md).
type versionsCommand struct {
	base
	limit  int
	output outputFormat
}

// versionsDoc is a line of versions -o json.
type versionsDoc struct {
	Change string `json:"change"`
	Since  string `json:"since"`
	// Open are the IDs of the open runs started before Since (at most
	// --limit), Retirable says there are none.
	Open      []string `json:"open"`
	Retirable bool     `json:"retirable"`
}

func (v *versionsCommand) flags(f *pflag.FlagSet) {
	f.IntVar(&v.limit, "limit", 20, "at most this many open runs named per change")
	v.output.add(f, "one object a line")
}

// changes are the changes versions reports on (the tests' own).
var changes = contract.Changes

// ralphTypes are the workflow types of Durable Ralph, for a query.
var ralphTypes = []string{
	contract.WorkflowSession, contract.WorkflowIssueQueue, contract.WorkflowIssueWork, contract.WorkflowPullRequest,
	contract.WorkflowNotification, contract.WorkflowChatInbox, contract.WorkflowAgentPreflight, contract.WorkflowChangeSet,
}

func (v *versionsCommand) run(cctx *commandContext, _ []string) error {
	if v.limit < 1 {
		return fmt.Errorf("invalid --limit %d: at least 1", v.limit)
	}
	conn, err := cctx.dial(v.cmd)
	if err != nil {
		return err
	}
	defer conn.close()
	types := make([]string, len(ralphTypes))
	for i, t := range ralphTypes {
		types[i] = fmt.Sprintf("WorkflowType = '%s'", t)
	}
	var docs []versionsDoc
	for _, c := range changes {
		since, err := time.Parse(time.DateOnly, c.Since)
		if err != nil {
			return fmt.Errorf("change %s: %w", c.ID, err)
		}
		query := fmt.Sprintf("ExecutionStatus = 'Running' AND StartTime < '%s' AND (%s)", since.Format(time.RFC3339), strings.Join(types, " OR "))
		open, err := listWorkflows(cctx, conn.client, query, v.limit)
		if err != nil {
			return fmt.Errorf("change %s: %w", c.ID, err)
		}
		d := versionsDoc{Change: c.ID, Since: c.Since, Open: []string{}, Retirable: len(open) == 0}
		for _, o := range open {
			d.Open = append(d.Open, o.WorkflowID)
		}
		docs = append(docs, d)
	}
	if v.output == outputJSON {
		p := newPrinter(cctx.stdout)
		for _, d := range docs {
			if err := p.print(d); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(cctx.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANGE\tSINCE\tOLD BRANCHES")
	for _, d := range docs {
		old := "can be removed: no open run started before it"
		if !d.Retirable {
			old = fmt.Sprintf("kept: open runs started before it: %s", strings.Join(d.Open, ", "))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Change, d.Since, old)
	}
	return tw.Flush()
}
