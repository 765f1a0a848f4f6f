package contract

import (
	"fmt"
	"time"
)

// Messages and names of time travel: a session rewound to an earlier
// iteration (Temporal's reset, then SignalRewound) or forked from one (a
// new session whose input carries the original's state, Fork).
const (
	// SignalRewound is sent by `starter rewind` to the run its reset
	// made: the session, which waits for it before its first iteration
	// after a reset, puts its workspace back to the iteration it was
	// reset to before it runs the next one. A RewindSignal whose To is
	// not the session's iteration is ignored.
	SignalRewound = "rewound"
	// QueryCarryOver answers with the session's whole state (CarryOver)
	// as it was after its last finished iteration: a fork reads it in a
	// replay of the original's history.
	QueryCarryOver = "carry-over"
	// ActivityRewindWorkspace moves a session's branch back to an
	// iteration's commit, keeping what it leaves on a ref.
	ActivityRewindWorkspace = "RewindWorkspace"
	// SearchRalphForkedFrom is "<session ID>@<iteration>" of a fork, and
	// of a session rewound, the iteration it was last rewound to
	// ("@<iteration>"): `temporal workflow list --query
	// 'RalphForkedFrom STARTS_WITH "ralph-app"'` finds the forks.
	SearchRalphForkedFrom = "RalphForkedFrom"
	// RewoundRefPrefix is where a rewind keeps the commits it leaves
	// behind: RewoundRefPrefix + <session>/<n>.
	RewoundRefPrefix = "refs/ralph/rewound/"
)

// Rewind is one rewind of a session, as status and list show it
// (rewound: [{to, at}]).
type Rewind struct {
	// To is the iteration the session went back to: the next one it ran
	// was To+1.
	To int `json:"to"`
	// At is when the rewind was asked for.
	At time.Time `json:"at"`
	// From is the last iteration the session had started before it.
	From int `json:"from"`
	// Commit is iteration To's commit, where the branch was put back;
	// OldHead where the branch was, which Ref keeps.
	Commit  string `json:"commit"`
	OldHead string `json:"old_head,omitempty"`
	Ref     string `json:"ref,omitempty"`
	// Kept are uncommitted files of the work tree (the cancelled
	// iteration's work, a person's edit) committed onto Ref.
	Kept []string `json:"kept,omitempty"`
	// Abandoned is what the iterations after To cost: counted apart from
	// the session's totals, never lost (money spent is spent).
	Abandoned Abandoned `json:"abandoned"`
	// Key is the execution key of the iterations left behind: their
	// logs are under .ralph/logs/<Key>.
	Key string `json:"key"`
	// By says who asked.
	By string `json:"by,omitempty"`
}

// Abandoned is what the iterations a rewind left behind cost.
type Abandoned struct {
	Iterations int     `json:"iterations"`
	CostUSD    float64 `json:"cost_usd"`
	Tokens     int64   `json:"tokens"`
}

// RewindSignal is the payload of SignalRewound.
type RewindSignal struct {
	// RunID is the run the reset made, which the signal is for.
	RunID  string `json:"run_id"`
	Rewind Rewind `json:"rewind"`
	// Earlier are the rewinds before this one, which the reset takes
	// the session back past when they came after To: they stay counted.
	Earlier []Rewind `json:"earlier,omitempty"`
	// Guidance is text for the next iteration's prompt (rewind --guide).
	Guidance string `json:"guidance,omitempty"`
}

// ForkedFrom says which session and iteration a fork started from.
type ForkedFrom struct {
	Session   string `json:"session"`
	Iteration int    `json:"iteration"`
	Commit    string `json:"commit"`
	// CostUSD is what the original had spent by then, which the fork's
	// totals start from.
	CostUSD float64 `json:"cost_usd"`
}

// String is "<session>@<iteration>", the fork's RalphForkedFrom.
func (f ForkedFrom) String() string { return fmt.Sprintf("%s@%d", f.Session, f.Iteration) }

// Fork is the input of a session forked from another: its state after
// From.Iteration, which the fork adopts instead of starting afresh.
type Fork struct {
	From  ForkedFrom `json:"from"`
	State CarryOver  `json:"state"`
	// Guidance is text for the fork's first prompt (fork --guide).
	Guidance string `json:"guidance,omitempty"`
}

// RewindInput is the input of RewindWorkspace.
type RewindInput struct {
	Workspace string `json:"workspace"`
	// Branch is the session's branch; Commit the commit it goes back
	// to; Ref where what it leaves is kept.
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	Ref    string `json:"ref"`
	// Key is the execution key of the iterations left behind: the
	// rewind waits for one of them still running on this worker.
	Key string `json:"key"`
	// WorkflowID is the session's: an iteration of an earlier run of it
	// still running on this worker is cancelled.
	WorkflowID string `json:"workflow_id"`
	// Iteration is the iteration the session goes back to, for the
	// commit of what the work tree held.
	Iteration int `json:"iteration"`
}

// RewindResult is what RewindWorkspace did.
type RewindResult struct {
	OldHead string   `json:"old_head"`
	Ref     string   `json:"ref"`
	Kept    []string `json:"kept,omitempty"`
	// Cancelled says an iteration still ran and was cancelled.
	Cancelled bool `json:"cancelled,omitempty"`
}

// RewoundRef is the ref that keeps what rewind number n of the session
// id left behind.
func RewoundRef(id string, n int) string {
	return fmt.Sprintf("%s%s/%d", RewoundRefPrefix, idPart(id), n)
}

// AbandonedTotal sums what the rewinds left behind.
func AbandonedTotal(rs []Rewind) Abandoned {
	var a Abandoned
	for _, r := range rs {
		a.Iterations += r.Abandoned.Iterations
		a.CostUSD += r.Abandoned.CostUSD
		a.Tokens += r.Abandoned.Tokens
	}
	return a
}
