// Package contract is what Durable Ralph's parts agree on: the workflow,
// activity, signal, update and query names; the search attributes; every
// payload that crosses a workflow's boundary (inputs, results, signal,
// update and query payloads, heartbeat details); the error types the
// workflows and the starter match on; workflow IDs; and the one line that
// tells an iteration. Workflows, activities, the CLI and the tests import
// it; it imports no package of the project, so workflow code links no
// activity code.
//
// # Compatibility
//
// Payloads are JSON in the histories of sessions that may run for weeks
// and replay at any time, so they only grow: a field is never renamed or
// given a new meaning. A field that histories recorded before it existed
// lack decodes to its zero value, and the zero value is defined to mean
// what the code did before the field existed. Where no zero value can do
// that, the workflow branches with workflow.GetVersion: each such branch
// is a Change of Changes (changes.go), with the day it shipped and what
// each of its versions does. The table is kept current with each field:
//
//	field                                    zero value means
//	---------------------------------------  ----------------------------------------------
//	AgentSettings.Backend                    "" is Claude Code
//	AgentSettings.Sandbox (Mode, Network)    "" is auto and internet: sessions started
//	                                         before the sandbox are contained from their
//	                                         next iteration on a worker that has one
//	IterationInput.Role, IterationResult.Role  "" is the executor (RoleOf)
//	IterationInput.ExecutionKey              "" keys records by SessionID (Key)
//	IterationInput.Resume                    nil: no earlier try to go on from
//	SessionInput.Host                        "" runs workspace activities on the session's
//	                                         own task queue, IDs without a host
//	SessionInput.HostTimeout                 0 is DefaultHostTimeout
//	SessionInput.Worktree                    nil works in Workspace itself
//	SessionInput.Roles, SessionInput.Plan    nil: executors only, no planning
//	SessionInput.NotifyParent                false signals no parent queue
//	Limits.MaxTaskFileRepairs                0 is DefaultMaxTaskFileRepairs
//	CarryOver.Limits (MaxIterations 0)       the input's limits (carried before set-limits)
//	CarryOver.ExecutionKey                   "" makes one from the workflow and first run IDs
//	CheckpointSettings.OnTimeout             "" is OnTimeoutContinue
//	Roles.ReviewEvery                        0 reviews only completion claims
//	QueueSettings.BaseBranch                 "" is the repository's default branch
//	GitSettings.ProtectedPaths               nil is DefaultProtectedPaths; empty ([])
//	                                         protects nothing (Protected)
//	IterationResult.NotCommitted             "": the iteration's work was not set aside
//	QueueSettings.Pull (Follow false)        the issue ends at "pull request opened"
//	SessionInput.Issue                       nil: checkpoints are not asked on GitHub
//	QueueCarryOver.Following                 nil: no pull request is followed
//	QueueSettings.Parallel                   0 is one issue at a time
//	QueueCarryOver.Working                   nil: no IssueWork workflow runs
//	PickInput.Skip                           nil skips nothing
//	Notification.Channel                     "" sends to every channel
//	InboxState.SlackAfter, TelegramOff       nil / false: no Slack thread read yet,
//	                                         Telegram polled
//	SessionInput.Fallback                    nil: a usage limit is waited for
//	CarryOver.Fallback                       nil: the executor's own backend runs
//	Totals.CostByBackend                     nil: no split (no agent.fallback)
//	IterationSummary.Backend                 "": the session's own backend ran
//	Progress.EarlierCostUSD, EarlierUsage    0: no dead attempt before this one (a
//	                                         worker before them carried nothing)
//
// Each workflow package replays the histories recorded from its
// workflow (workflows/<package>/testdata/histories) against the current
// code, and workflows' TestVersions holds every GetVersion of the code to
// Changes, with a recorded history through each old branch.
package contract
