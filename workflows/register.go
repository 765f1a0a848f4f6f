// Package workflows is the list of Durable Ralph's workflows. Each lives
// in a package of its own below this one, with its tests and its recorded
// histories:
//
//	session    Session: the Ralph loop over one workspace
//	queue      IssueQueue: a repository's ready-labelled issues
//	issue      IssueWork: one issue from claim to pull request
//	pull       PullRequest: an issue's pull request followed to its merge;
//	           Adopted: one round asked for on a pull request Ralph did not open
//	notify     Notification: one notification to every channel
//	inbox      ChatInbox: the answers people give in Telegram and Slack
//	preflight  AgentPreflight: a host's check that its agents can run
//	schedule   Scheduled: a schedule's run of a session or a queue
//	changeset  ChangeSet: one change across several repositories
//	flow       what they share (host routing, activity options, search
//	           attributes); no workflow
//
// The worker, the workflow-only worker, the replayer and the end-to-end
// tests register them from All, so that none of them can miss one.
package workflows

import (
	"github.com/durable-ralph/ralph/workflows/changeset"
	"github.com/durable-ralph/ralph/workflows/inbox"
	"github.com/durable-ralph/ralph/workflows/issue"
	"github.com/durable-ralph/ralph/workflows/notify"
	"github.com/durable-ralph/ralph/workflows/preflight"
	"github.com/durable-ralph/ralph/workflows/pull"
	"github.com/durable-ralph/ralph/workflows/queue"
	"github.com/durable-ralph/ralph/workflows/schedule"
	"github.com/durable-ralph/ralph/workflows/session"
)

// All are Durable Ralph's workflow functions. A workflow's type name is
// its function's name, which histories record: renaming one is a
// change that breaks every run of it.
var All = []any{
	session.Session,
	queue.IssueQueue,
	issue.IssueWork,
	pull.PullRequest,
	pull.Adopted,
	notify.Notification,
	inbox.ChatInbox,
	preflight.AgentPreflight,
	schedule.Scheduled,
	changeset.ChangeSet,
}

// Registry is what workflows are registered with: a worker, a replayer
// or a test environment.
type Registry interface {
	RegisterWorkflow(w any)
}

// Register registers every workflow of All with r.
func Register(r Registry) {
	for _, w := range All {
		r.RegisterWorkflow(w)
	}
}
