package contract

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ChangeSetSpec is one change across several repositories, as a set file
// writes it: a task for the whole set and one member per repository, each
// with its own task and the members it comes after (whose changes it
// builds on and which merge before it).
type ChangeSetSpec struct {
	// Name names the set: its workflow is ChangeSetID(Name).
	Name string `json:"name" yaml:"name"`
	// Task is what the whole set is for; every member's prompt carries it.
	Task    string            `json:"task,omitempty" yaml:"task"`
	Members []ChangeSetMember `json:"members" yaml:"repos"`
}

// ChangeSetMember is one repository of a change set.
type ChangeSetMember struct {
	// Repo is the GitHub repository, owner/name.
	Repo string `json:"repo" yaml:"repo"`
	// Workspace, when set, is a local clone of Repo to work in; otherwise
	// the repository is cloned.
	Workspace string `json:"workspace,omitempty" yaml:"workspace"`
	// Host is the host whose worker runs the member (its workspace is
	// there); the set's host when empty.
	Host string `json:"host,omitempty" yaml:"host"`
	// Task is what this repository's change is; the set's task when empty.
	Task string `json:"task,omitempty" yaml:"task"`
	// After are the members (by Repo) whose changes this one builds on:
	// it starts once they are done and merges after them.
	After []string `json:"after,omitempty" yaml:"after"`
}

// ChangeSetID is the ID of the ChangeSet workflow of the set called name.
func ChangeSetID(name string) string { return "ralph-changeset-" + name }

// changeSetNameRE is what a change set's name may hold (it is part of
// workflow IDs and branch names).
var changeSetNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// repoRE is an owner/name of GitHub.
var repoRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)

// Validate checks s as a set file must be: a name, at least one member,
// every member a repository of its own (owner/name, once) with a task
// (its own or the set's), and an order without cycles among known
// members. Each error names the key it is about (repos[1].after).
func (s ChangeSetSpec) Validate() error {
	if !changeSetNameRE.MatchString(s.Name) {
		return fmt.Errorf("name: %q is not a change set name: use lower-case letters, digits, '.', '_' and '-' (at most 63, starting with a letter or digit)", s.Name)
	}
	if len(s.Members) == 0 {
		return fmt.Errorf("repos: a change set needs at least one repository")
	}
	seen := map[string]int{}
	for i, m := range s.Members {
		key := fmt.Sprintf("repos[%d]", i)
		if !repoRE.MatchString(m.Repo) {
			return fmt.Errorf("%s.repo: %q is not a GitHub repository (owner/name)", key, m.Repo)
		}
		if j, ok := seen[strings.ToLower(m.Repo)]; ok {
			return fmt.Errorf("%s.repo: %s is repos[%d] already: a repository is in a set once", key, m.Repo, j)
		}
		seen[strings.ToLower(m.Repo)] = i
		if strings.TrimSpace(m.Task) == "" && strings.TrimSpace(s.Task) == "" {
			return fmt.Errorf("%s.task: %s has no task, and the set has none (task)", key, m.Repo)
		}
	}
	for i, m := range s.Members {
		for _, a := range m.After {
			j, ok := seen[strings.ToLower(a)]
			switch {
			case !ok:
				return fmt.Errorf("repos[%d].after: %q is not a repository of this set", i, a)
			case j == i:
				return fmt.Errorf("repos[%d].after: %s cannot come after itself", i, a)
			}
		}
	}
	if cycle := s.cycle(); cycle != nil {
		names := make([]string, len(cycle))
		for k, i := range cycle {
			names[k] = s.Members[i].Repo
		}
		return fmt.Errorf("repos[%d].after: the order has a cycle: %s", cycle[0], strings.Join(append(names, names[0]), " after "))
	}
	return nil
}

// Index is the member whose Repo is repo (case as GitHub ignores it), or
// -1.
func (s ChangeSetSpec) Index(repo string) int {
	return slices.IndexFunc(s.Members, func(m ChangeSetMember) bool { return strings.EqualFold(m.Repo, repo) })
}

// Before are the members (indexes, in the set's order) that member i
// comes after.
func (s ChangeSetSpec) Before(i int) []int {
	var out []int
	for _, a := range s.Members[i].After {
		if j := s.Index(a); j >= 0 && !slices.Contains(out, j) {
			out = append(out, j)
		}
	}
	slices.Sort(out)
	return out
}

// Order is the order the members merge in: each after the members it
// comes after, and otherwise as the file lists them (the first member
// whose predecessors are all placed goes next). s must be valid.
func (s ChangeSetSpec) Order() []int {
	placed := make([]bool, len(s.Members))
	out := make([]int, 0, len(s.Members))
	for len(out) < len(s.Members) {
		next := -1
		for i := range s.Members {
			if !placed[i] && s.ready(i, placed) {
				next = i
				break
			}
		}
		if next < 0 {
			return out // a cycle: Validate refuses it
		}
		placed[next] = true
		out = append(out, next)
	}
	return out
}

// Ready are the members not in done and not started whose predecessors
// are all done, in the set's order: those that may start now.
func (s ChangeSetSpec) Ready(done, started []bool) []int {
	var out []int
	for _, i := range s.Order() {
		if !done[i] && !started[i] && s.ready(i, done) {
			out = append(out, i)
		}
	}
	return out
}

// ready reports whether every member i comes after is in set.
func (s ChangeSetSpec) ready(i int, set []bool) bool {
	for _, j := range s.Before(i) {
		if !set[j] {
			return false
		}
	}
	return true
}

// cycle is a cycle of the members' order (indexes, each after the next,
// the last after the first, starting at the lowest index), or nil.
func (s ChangeSetSpec) cycle() []int {
	const (
		unseen = iota
		open
		closed
	)
	state := make([]int, len(s.Members))
	var path []int
	var visit func(i int) []int
	visit = func(i int) []int {
		state[i] = open
		path = append(path, i)
		for _, j := range s.Before(i) {
			switch state[j] {
			case open:
				c := slices.Clone(path[slices.Index(path, j):])
				low := slices.Index(c, slices.Min(c))
				return append(c[low:], c[:low]...)
			case unseen:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = closed
		return nil
	}
	for i := range s.Members {
		if state[i] == unseen {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

// ChangeSetInput is the input of the ChangeSet workflow.
type ChangeSetInput struct {
	Spec ChangeSetSpec `json:"spec"`
	// Members are what each member's issue work runs with, in the order
	// of Spec.Members: its repository, clone and pull request settings
	// (whose AutoMerge the set ignores: the set merges), and its
	// session's template.
	Members []ChangeSetMemberInput `json:"members"`
	// AutoMerge merges the set, in its order, once every pull request is
	// green and approved; otherwise a person says merge
	// (SignalChangeSetMerge).
	AutoMerge bool `json:"auto_merge,omitempty"`
	// MaxCostUSD bounds what the whole set may cost; 0 is no limit.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// PollInterval is how often the set reads its pull requests once all
	// are open.
	PollInterval time.Duration `json:"poll_interval,omitempty"`
	// RevertMerged: when the set fails or is abandoned after some of its
	// pull requests merged (or a merge stops midway), it opens a pull
	// request reverting each of those, in reverse merge order, instead
	// of leaving them merged (change-set file: revert-merged).
	RevertMerged bool `json:"revert_merged,omitempty"`
	// Origin, for a set a queue started, is the issue it came from.
	Origin *ChangeSetOrigin `json:"origin,omitempty"`
	// CarryOver is filled in by continue-as-new.
	CarryOver *ChangeSetCarryOver `json:"carry_over,omitempty"`
}

// ChangeSetOrigin is the ready issue of a queue whose "Repos:" line
// started a set: the set takes the issue's text as its task, claims it
// with the queue's labels, says on it how the set went, and tells the
// queue its end (SignalIssueEnded) as an issue work would.
type ChangeSetOrigin struct {
	QueueID string `json:"queue_id"`
	Repo    Repo   `json:"repo"`
	Issue   Issue  `json:"issue"`
	// Label is the queue's ready label; Self the login the worker writes
	// as there.
	Label string `json:"label"`
	Self  string `json:"self,omitempty"`
}

// ChangeSetCarryOver is what a ChangeSet run passes to the next when it
// continues as new (a set that waits long for reviews).
type ChangeSetCarryOver struct {
	Status    ChangeSetStatus   `json:"status"`
	Preflight []PreflightResult `json:"preflight"`
	// Links are the link comments last written, Opened when each pull
	// request was seen open.
	Links      []string    `json:"links"`
	Opened     []time.Time `json:"opened"`
	MergeAsked bool        `json:"merge_asked,omitempty"`
	// OriginText is the comment last written on the origin issue;
	// Freed says its queue was told the issue's work is done (every pull
	// request open) and the set follows them.
	OriginText string  `json:"origin_text,omitempty"`
	Freed      bool    `json:"freed,omitempty"`
	FreedCost  float64 `json:"freed_cost,omitempty"`
}

// ChangeSetMemberInput is what one member's issue work runs with.
type ChangeSetMemberInput struct {
	Settings QueueSettings `json:"settings"`
	Session  SessionInput  `json:"session"`
}

// Messages of a ChangeSet workflow (besides those of its members'
// issue works and followers: SignalIssueEvent, SignalIssueEnded,
// SignalPullEnded).
const (
	// SignalChangeSetMerge asks a set whose pull requests are all green
	// and approved to merge them, in its order.
	SignalChangeSetMerge = "change-set-merge"
	// SignalChangeSetAbandon ends the set: nothing more starts, the
	// members' work is cancelled and their pull requests closed, with a
	// comment saying so.
	SignalChangeSetAbandon = "change-set-abandon"
)

// States of a change set and of its members.
const (
	// The set's.
	SetWorking    = "working"     // members are worked on
	SetReady      = "ready"       // every pull request is open; waiting for green, approved, and a merge
	SetMerging    = "merging"     // merging in order
	SetMerged     = "merged"      // every pull request merged
	SetFailed     = "failed"      // a member failed for good: the others were closed
	SetAbandoned  = "abandoned"   // a person abandoned it: the members were closed
	SetHalfMerged = "half_merged" // a merge failed midway: some merged, the rest stopped

	// A member's.
	MemberWaiting = "waiting" // for the members it comes after
	MemberWorking = "working" // its issue is worked on
	MemberOpen    = "open"    // its pull request is open
	MemberMerged  = "merged"
	MemberFailed  = "failed"
	MemberClosed  = "closed" // its pull request was closed (by the set's compensation or a person)
	// MemberReverted: merged, and a pull request that reverts it is open
	// (Revert), the set having rolled back (revert-merged).
	MemberReverted = "reverted"
)

// ChangeSetStatus is what the status query of a ChangeSet answers.
type ChangeSetStatus struct {
	Name    string                  `json:"name"`
	State   string                  `json:"state"`
	Message string                  `json:"message,omitempty"`
	Members []ChangeSetMemberStatus `json:"members"`
	// Order is the merge order, by repository.
	Order   []string  `json:"order"`
	CostUSD float64   `json:"cost_usd"`
	Story   []string  `json:"story,omitempty"`
	Started time.Time `json:"started"`
	Updated time.Time `json:"updated"`
	// Origin is the issue a queue started the set from, if any.
	Origin string `json:"origin,omitempty"`
}

// ChangeSetMemberStatus is one member as the set sees it.
type ChangeSetMemberStatus struct {
	Repo     string   `json:"repo"`
	State    string   `json:"state"`
	After    []string `json:"after,omitempty"`
	Issue    int      `json:"issue,omitempty"`
	IssueURL string   `json:"issue_url,omitempty"`
	Pull     int      `json:"pull,omitempty"`
	PullURL  string   `json:"pull_url,omitempty"`
	Branch   string   `json:"branch,omitempty"`
	Head     string   `json:"head,omitempty"`
	Log      []string `json:"log,omitempty"`
	// Change is what its branch changed (IssueOutcome.Change).
	Change    string `json:"change,omitempty"`
	ChangeCut bool   `json:"change_cut,omitempty"`
	// Checks and Approved are the last reading of the pull request.
	Checks   string  `json:"checks,omitempty"`
	Approved bool    `json:"approved,omitempty"`
	CostUSD  float64 `json:"cost_usd,omitempty"`
	Message  string  `json:"message,omitempty"`
	// MergeSHA is the commit its merge made; Revert the URL of the pull
	// request that reverts it, once the set rolled back.
	MergeSHA string `json:"merge_sha,omitempty"`
	Revert   string `json:"revert,omitempty"`
}

// ClosePullInput closes a pull request with a comment saying why, once:
// a pull request that is closed or merged already is left as it is.
type ClosePullInput struct {
	Repo   Repo `json:"repo"`
	Number int  `json:"number"`
	// Head, when Number is 0, is the branch (of the repository itself)
	// whose open pull request, opened by Self, is closed: that of an
	// issue work cancelled before it said which it opened. None is no
	// error.
	Head   string `json:"head,omitempty"`
	Marker string `json:"marker"`
	Why    string `json:"why"`
	// Self is the login the worker writes as (CommentInput.Self).
	Self string `json:"self,omitempty"`
}

// ClosedPull is what ClosePull found: the pull request (0 when Head had
// no open one), closed now or before, or merged and left so.
type ClosedPull struct {
	Number int    `json:"number,omitempty"`
	URL    string `json:"url,omitempty"`
	Merged bool   `json:"merged,omitempty"`
}

// RevertInput makes, in a clone on its host, the branch of a pull request
// that reverts a merged one: a change set rolled back (revert-merged).
// The branch holds one commit on Base as origin has it, undoing Commit
// (the merge commit or squash of the merged pull request).
type RevertInput struct {
	Clone    string `json:"clone"`
	Base     string `json:"base"`
	Commit   string `json:"commit"`
	Branch   string `json:"branch"`
	Subject  string `json:"subject"`
	Body     string `json:"body,omitempty"`
	TokenEnv string `json:"token_env,omitempty"`
}

// RevertResult is the pushed revert branch's head.
type RevertResult struct {
	Head string `json:"head"`
}

// RevertBranch is the branch of the pull request that reverts a change
// set member's merged one.
func RevertBranch(set string, pull int) string {
	return fmt.Sprintf("ralph/revert-%s-%d", set, pull)
}
