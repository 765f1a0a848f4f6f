package contract

// TaskQueue is the default task queue of sessions and their activities.
const TaskQueue = "ralph"

// Message names. They are part of the contract with the starter CLI and with
// people who signal sessions from the Temporal UI.
const (
	SignalGuide      = "guide"
	SignalPause      = "pause"
	SignalResume     = "resume"
	SignalStop       = "stop"
	SignalCheckpoint = "checkpoint"
	UpdateRespond    = "respond"
	UpdateSetLimits  = "set-limits"
	QueryStatus      = "status"
	// QueryIterations answers with the iterations of the queried run
	// after the number given (an int), oldest first: a follower reads
	// every iteration's line from it, however fast they come.
	QueryIterations = "iterations"
	// SignalAgentSlot is how a worker tells a session that its iteration
	// waits for one of the worker's agent slots (worker.max-agents), and
	// when it got one (an AgentSlot).
	SignalAgentSlot = "agent-slot"
)

// HostTaskQueue is the task queue of the worker on host that serves
// base: every activity that touches a workspace on host runs there.
func HostTaskQueue(base, host string) string { return base + "@" + host }

// Names of the search attributes the session keeps current, so the UI
// and `temporal workflow list --query` can find sessions by state. Their
// types: Status, Repo and Host are keywords, Iteration and Issue ints,
// CostUSD a double. The contract holds names only, so that it links no
// SDK: the workflows hold the typed keys.
const (
	SearchRalphStatus    = "RalphStatus"
	SearchRalphIteration = "RalphIteration"
	SearchRalphCostUSD   = "RalphCostUSD"
	SearchRalphRepo      = "RalphRepo"
	// SearchRalphHost is the host that holds a session's workspace.
	SearchRalphHost = "RalphHost"
	// SearchRalphIssue is the issue number of an issue's session.
	SearchRalphIssue = "RalphIssue"
)

// Messages of the issue queue besides those it shares with sessions
// (guide, pause, resume, stop and the status query).
const (
	// SignalPoke ends an idle queue's sleep: it looks for issues now.
	SignalPoke = "poke"
	// SignalWithdraw withdraws a standing guidance text of a queue: the
	// text itself, or its number in the status (from 1).
	SignalWithdraw = "withdraw"
	// SignalSessionProgress is how an issue's session tells its queue
	// about each iteration (an IterationSummary with the session ID).
	SignalSessionProgress = "session-progress"
)

// ActivityAwaitSession is the name of the activity that waits for a
// running session to end and returns its SessionResult. The worker
// registers it (it needs a Temporal client, which activities do not
// otherwise hold).
const ActivityAwaitSession = "AwaitSession"

// ActivityStillRunning is the name of the activity that returns which of
// the workflow IDs it is given still run (the worker registers it beside
// AwaitSession): a queue frees the slot of an issue whose workflow ended
// without telling it (terminated by a person).
const ActivityStillRunning = "StillRunning"

// Workflow type names, as the worker registers them.
const (
	WorkflowSession    = "Session"
	WorkflowIssueQueue = "IssueQueue"
	// WorkflowIssueWork works on one issue of a queue (see IssueWorkID).
	WorkflowIssueWork = "IssueWork"
	// WorkflowPullRequest follows an issue's pull request (see
	// PullRequestID).
	WorkflowPullRequest = "PullRequest"
	// WorkflowAgentPreflight checks, on the worker of a session's host,
	// the agents of a session about to start (see PreflightInput).
	WorkflowAgentPreflight = "AgentPreflight"
	// WorkflowChangeSet runs one change across several repositories (see
	// ChangeSetID).
	WorkflowChangeSet = "ChangeSet"
)

// Activity type names, as the worker registers them (the names of the
// methods of activities.Agent and github.Activities): workflows call
// activities by these names, so that workflow code links none of the
// activities' code.
const (
	// Workspace activities, on the host's task queue (HostTaskQueue).
	ActivityHostReady            = "HostReady"
	ActivityPrepareWorkspace     = "PrepareWorkspace"
	ActivityRunIteration         = "RunIteration"
	ActivityPrepareIssueWorktree = "PrepareIssueWorktree"
	ActivityPushBranch           = "PushBranch"
	// ActivityCloneRepo clones a change set's repository on its host.
	ActivityCloneRepo = "CloneRepo"
	// ActivityPrepareRevert pushes the branch that reverts a merged
	// member of a change set rolled back.
	ActivityPrepareRevert = "PrepareRevert"
	ActivityCheckAgents   = "CheckAgents"
	// GitHub activities, on the shared task queue.
	ActivityPreflight = "Preflight"
	ActivityPickIssue = "PickIssue"
	ActivityReadIssue = "ReadIssue"
	ActivitySetLabels = "SetLabels"
	ActivityComment   = "Comment"
	ActivityOpenPull  = "OpenPull"
	// The pull request's follower: its reading, replies, review
	// requests and merge (GitHub), and each round's work tree (git, on
	// the clone's host).
	ActivityPullState        = "PullState"
	ActivityReplyToComment   = "ReplyToComment"
	ActivityRequestReviewers = "RequestReviewers"
	ActivityMergePull        = "MergePull"
	// ActivityOpenIssue opens a change set member's issue once;
	// ActivityClosePull closes a member's pull request with a comment.
	ActivityOpenIssue = "OpenIssue"
	ActivityClosePull = "ClosePull"
	// ActivityCloseIssue closes the issue a merged change set came from.
	ActivityCloseIssue   = "CloseIssue"
	ActivityPrepareRound = "PrepareRound"
	// ActivityReadAnswer reads an issue's answer to a checkpoint.
	ActivityReadAnswer = "ReadAnswer"
)
