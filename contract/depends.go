package contract

import (
	"fmt"
	"strings"
)

// IssueRef names an issue another depends on: in the queue's repository
// (Owner and Name empty) or in another.
type IssueRef struct {
	Owner  string `json:"owner,omitempty"`
	Name   string `json:"name,omitempty"`
	Number int    `json:"number"`
}

// String is the reference as GitHub writes it: "#12", or "acme/lib#4".
func (r IssueRef) String() string {
	if r.Owner == "" {
		return fmt.Sprintf("#%d", r.Number)
	}
	return fmt.Sprintf("%s/%s#%d", r.Owner, r.Name, r.Number)
}

// Waiting is a ready issue the queue does not take yet, and why: open
// blockers (On), a blocker that needs a person to decide (Person), or a
// dependency cycle it is part of (Cycle).
type Waiting struct {
	Number int    `json:"number"`
	Title  string `json:"title,omitempty"`
	// On are the open issues it waits for.
	On []IssueRef `json:"on,omitempty"`
	// Person says what a person must do first, "" when it waits for its
	// blockers alone.
	Person string `json:"person,omitempty"`
	// Cycle is the dependency cycle it is part of, from it back to it
	// (#2 → #1 → #2): none of them is taken.
	Cycle []int `json:"cycle,omitempty"`
}

// Text says what w waits for, in a line.
func (w Waiting) Text() string {
	switch {
	case len(w.Cycle) > 0:
		var path []string
		for _, n := range w.Cycle {
			path = append(path, fmt.Sprintf("#%d", n))
		}
		return fmt.Sprintf("is in a dependency cycle (%s): none of these issues is taken until a person breaks the cycle", strings.Join(path, " → "))
	case w.Person != "":
		return "waits for a person: " + w.Person
	}
	var on []string
	for _, r := range w.On {
		on = append(on, r.String())
	}
	return "waits for " + strings.Join(on, ", ") + " (taken once each is closed as completed or its pull request merged)"
}

// WaitMarker marks the comment of queue on issue n that says what the
// issue waits for: written once, edited when that changes.
func WaitMarker(queue string, n int) string {
	return fmt.Sprintf("<!-- ralph:waits-%s-%d -->", queue, n)
}
