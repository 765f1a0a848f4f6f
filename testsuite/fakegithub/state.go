package fakegithub

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"time"
)

// now is the time of a change made now: GitHub timestamps have one-second
// resolution.
func (s *Server) now() time.Time { return time.Now().UTC().Truncate(time.Second) }

func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

func (s *Server) mustIssue(number int) *issue {
	if number < 1 || number > len(s.issues) {
		panic(fmt.Sprintf("fakegithub: no issue #%d", number))
	}
	return s.issues[number-1]
}

func (s *Server) mustPull(number int) *issue {
	is := s.mustIssue(number)
	if is.pull == nil {
		panic(fmt.Sprintf("fakegithub: #%d is not a pull request", number))
	}
	return is
}

func (s *Server) findIssue(number int) *issue {
	if number < 1 || number > len(s.issues) {
		return nil
	}
	return s.issues[number-1]
}

func (s *Server) findLabel(name string) *label {
	for _, l := range s.labels {
		if strings.EqualFold(l.name, name) {
			return l
		}
	}
	return nil
}

// ensureLabel returns the repository label called name, creating it.
func (s *Server) ensureLabel(name string) *label {
	if l := s.findLabel(name); l != nil {
		return l
	}
	l := &label{id: s.newID(), name: name, color: defaultLabelColor}
	s.labels = append(s.labels, l)
	return l
}

func hasLabel(is *issue, name string) int {
	for i, l := range is.labels {
		if strings.EqualFold(l, name) {
			return i
		}
	}
	return -1
}

// addLabel adds a label with a "labeled" event (and delivery, see
// SetWebhook); it reports whether the issue did not have it.
func (s *Server) addLabel(is *issue, name, actor string, at time.Time) bool {
	l := s.ensureLabel(name)
	if hasLabel(is, l.name) >= 0 {
		return false
	}
	is.labels = append(is.labels, l.name)
	is.events = append(is.events, &event{id: s.newID(), event: "labeled", actor: actor, label: l.name, labelColor: l.color, created: at})
	is.updated = at
	s.hookIssue(is, "labeled", actor, l.name)
	return true
}

// removeLabel removes a label with an "unlabeled" event (and delivery);
// it reports whether the issue had it.
func (s *Server) removeLabel(is *issue, name, actor string, at time.Time) bool {
	i := hasLabel(is, name)
	if i < 0 {
		return false
	}
	name = is.labels[i]
	is.labels = slices.Delete(is.labels, i, i+1)
	color := defaultLabelColor
	if l := s.findLabel(name); l != nil {
		color = l.color
	}
	is.events = append(is.events, &event{id: s.newID(), event: "unlabeled", actor: actor, label: name, labelColor: color, created: at})
	is.updated = at
	s.hookIssue(is, "unlabeled", actor, name)
	return true
}

// setLabels replaces the issue's labels, with events for the differences.
func (s *Server) setLabels(is *issue, names []string, actor string, at time.Time) {
	replace(is.labels, names, func(old string) { s.removeLabel(is, old, actor, at) }, func(n string) { s.addLabel(is, n, actor, at) })
}

// setAssignees replaces the issue's assignees, with events for the
// differences.
func (s *Server) setAssignees(is *issue, logins []string, actor string, at time.Time) {
	replace(is.assignees, logins, func(old string) { s.unassign(is, old, actor, at) }, func(l string) { s.assign(is, l, actor, at) })
}

// replace makes a list of names (of labels, of assignees) of cur want:
// remove for each of cur that is not in want, in any case, then add for
// each of want.
func replace(cur, want []string, remove, add func(string)) {
	for _, old := range slices.Clone(cur) {
		if !containsFold(want, old) {
			remove(old)
		}
	}
	for _, n := range want {
		add(n)
	}
}

func (s *Server) assign(is *issue, login, actor string, at time.Time) {
	if login == "" || slices.ContainsFunc(is.assignees, func(a string) bool { return strings.EqualFold(a, login) }) {
		return
	}
	is.assignees = append(is.assignees, login)
	is.events = append(is.events, &event{id: s.newID(), event: "assigned", actor: actor, assignee: login, created: at})
	is.updated = at
}

func (s *Server) unassign(is *issue, login, actor string, at time.Time) {
	i := slices.IndexFunc(is.assignees, func(a string) bool { return strings.EqualFold(a, login) })
	if i < 0 {
		return
	}
	login = is.assignees[i]
	is.assignees = slices.Delete(is.assignees, i, i+1)
	is.events = append(is.events, &event{id: s.newID(), event: "unassigned", actor: actor, assignee: login, created: at})
	is.updated = at
}

// setState opens or closes the issue is with a "reopened" or "closed"
// event (and delivery), and returns the event: nil if it was in state.
func (s *Server) setState(is *issue, state, reason, actor string, at time.Time) *event {
	if is.state == state {
		if state == "closed" && reason != "" {
			is.stateReason = reason
		}
		return nil
	}
	is.state = state
	is.updated = at
	e := &event{id: s.newID(), event: "closed", actor: actor, created: at}
	if state == "closed" {
		is.stateReason = reason
		is.closed = at
		is.closedBy = actor
	} else {
		e.event = "reopened"
		is.stateReason = "reopened"
		is.closed = time.Time{}
		is.closedBy = ""
	}
	is.events = append(is.events, e)
	s.hookIssue(is, e.event, actor, "")
	return e
}

func (s *Server) lock(is *issue, reason, actor string, at time.Time) {
	if is.locked {
		return
	}
	is.locked = true
	is.lockReason = reason
	is.updated = at
	is.events = append(is.events, &event{id: s.newID(), event: "locked", actor: actor, lockReason: reason, created: at})
}

func (s *Server) unlock(is *issue, actor string, at time.Time) {
	if !is.locked {
		return
	}
	is.locked = false
	is.lockReason = ""
	is.updated = at
	is.events = append(is.events, &event{id: s.newID(), event: "unlocked", actor: actor, created: at})
}

func (s *Server) rename(is *issue, title, actor string, at time.Time) {
	if is.title == title {
		return
	}
	is.events = append(is.events, &event{id: s.newID(), event: "renamed", actor: actor, renameFrom: is.title, rename: title, created: at})
	is.title = title
	is.updated = at
}

// addComment adds a comment by author to the issue is, now, with its
// delivery (see SetWebhook).
func (s *Server) addComment(is *issue, author, body string) *comment {
	at := s.now()
	c := &comment{id: s.newID(), number: is.number, author: author, body: body, created: at, updated: at}
	is.comments = append(is.comments, c)
	s.comments[c.id] = c
	is.updated = at
	s.hookComment(is, c)
	return c
}

// sortedLabels lists the issue's labels by name, case-insensitively, the
// order in which GitHub lists them.
func (s *Server) sortedLabels(is *issue) []string {
	if len(is.labels) == 0 {
		return nil
	}
	out := slices.Clone(is.labels)
	sort.SliceStable(out, func(i, j int) bool { return strings.ToLower(out[i]) < strings.ToLower(out[j]) })
	return out
}

// role is login's repository role.
func (s *Server) role(login string) string {
	if r, ok := s.roles[strings.ToLower(login)]; ok {
		return r
	}
	switch {
	case strings.EqualFold(login, s.owner):
		return "admin"
	case strings.EqualFold(login, s.bot):
		return "write"
	}
	return "none"
}

// legacyPermission maps a role to the permission field of the collaborator
// permission endpoint: maintain reads as write and triage as read.
func legacyPermission(role string) string {
	switch role {
	case "admin":
		return "admin"
	case "maintain", "write":
		return "write"
	case "triage", "read":
		return "read"
	}
	return "none"
}

// userID is a stable id for login.
func userID(login string) int64 {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(login)))
	return int64(h.Sum32()%90_000_000) + 10_000_000
}
