package contract

import "fmt"

// A Change is a change of workflow code that runs recorded before it
// would not replay, so the workflow branches on it with
// workflow.GetVersion(ctx, ID, DefaultVersion, len(Means)-1). Runs
// recorded before the change take the old branches; a test
// (workflows' TestVersions) replays a recorded history through each.
type Change struct {
	ID string
	// Since is the UTC day its newest version shipped (YYYY-MM-DD): a
	// run started before it may still take an old branch; one started
	// after never does.
	Since string
	// Means says what each version does: Means[0] DefaultVersion's (the
	// code before the change), Means[v] version v's.
	Means []string
}

// Changes are every Change the workflows branch on, oldest first. A
// change's old branches are removed (its GetVersion's minimum raised, its
// row and the histories of its old branches deleted) only once no run
// started before its Since is open: `starter versions` lists such runs
// (docs/durability.md, "Changing the workflow safely").
var Changes = []Change{
	{"drain-signals", "2026-11-22", []string{
		"signals taken by a selector listener, no wait for update handlers before the end",
		"pending signals taken before each decision; the end waits for running updates"}},
	{"attach-running-session", "2026-11-22", []string{
		"a queue fails an issue whose session already runs",
		"it attaches to that session and waits for it"}},
	{"complete-at-prepare", "2026-11-22", []string{
		"an already complete task file still runs iterations",
		"the session ends complete at prepare, no iteration run"}},
	{"limited-state", "2026-11-22", []string{
		"a limit ends the session failed",
		"a limit ends it limited"}},
	{"follow-pull", "2026-11-24", []string{
		"no follower is started for the issue's pull request",
		"a PullRequest follower is started"}},
	{"issue-workflow", "2026-11-24", []string{
		"the queue run works on the issue itself (Current)",
		"each issue is an IssueWork workflow, queue.parallel at once"}},
	{"notify", "2026-11-24", []string{
		"no notification",
		"a Notification child per event",
		"only for the events the worker's Notifies says it sends"}},
	{"publish-throttle", "2026-11-27", []string{
		"every change of iteration or cost is upserted",
		"at most every 5 s unless the state changes with it"}},
	{"run-min-age", "2026-11-27", []string{
		"continue as new after iterations-per-run",
		"and once the run is 2 s old (the server delays younger ones)"}},
	{"failed-cost", "2026-11-27", []string{
		"an iteration that failed after its retries counts no cost",
		"it counts its last heartbeat's, when that timed out"}},
	{"inbox-hold-replies", "2026-11-27", []string{
		"a reply to the bot that answers no question is told so",
		"it is held a moment for the question it may answer"}},
	{"inbox-reply-by-buttons", "2026-11-29", []string{
		"a reply to a message of the bot the inbox does not know matches no question",
		"it answers the question its message's buttons name (a copy sent again after a worker died)"}},
	{"ask-before-complete", "2026-11-28", []string{
		"a question asked in the iteration that completes the work is dropped",
		"it is asked before the session ends, the loop going on with its answer"}},
	{"recover-uncounted", "2026-11-28", []string{
		"the cost of iterations that failed after their retries is lost",
		"the next iteration recovers what their last runs cost"}},
	{"budget-wait", "2026-11-28", []string{
		"a queue its daily budget stopped shows idle until the next UTC day",
		"it shows budget_wait and a set-limits raise of the budget wakes it"}},
	{"budget-answer", "2026-11-29", []string{
		"a queue in budget_wait sends a notification that asks nothing",
		"its notification is a budget question: a respond answer raises the daily budget, doubles it (approve) or stops the queue"}},
	// A family of markers, one per iteration, and only in reset runs:
	// not a change of code but where a reset run waited for its rewind
	// (ChangeFamily).
	{RewindGate, "2026-11-28", []string{
		"the turn of a reset run replayed from before the reset, or of any other run: no wait",
		"the first turn a reset run took live: it waited for starter rewind's signal"}},
}

// RewindGate is the change ID, with the iteration, of the marker a reset
// session records at the turn where it waited for its rewind.
const RewindGate = "rewind-gate-%d"

// ChangeFamily is the entry of Changes that change ID id belongs to: id
// itself, or RewindGate for its markers.
func ChangeFamily(id string) string {
	var n int
	if _, err := fmt.Sscanf(id, RewindGate, &n); err == nil && fmt.Sprintf(RewindGate, n) == id {
		return RewindGate
	}
	return id
}
