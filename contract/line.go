package contract

import (
	"fmt"
	"strings"
	"time"
)

// Elapsed is the time from start to at as m:ss, or h:mm:ss.
func Elapsed(start, at time.Time) string {
	d := at.Sub(start)
	if start.IsZero() || d < 0 {
		d = 0
	}
	s := int(d / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// Line is how e reads for a person: the time since start, then the tool
// and its subject, the message or the error.
func (e LiveEvent) Line(start time.Time) string {
	at := Elapsed(start, e.At)
	switch e.Kind {
	case LiveSays:
		return fmt.Sprintf("%s ▸ says  %q", at, e.Text)
	case LiveError:
		return fmt.Sprintf("%s ▸ error %s", at, e.Text)
	}
	return strings.TrimRight(fmt.Sprintf("%s ▸ %-5s %s", at, e.Name, e.Text), " ")
}

// ShortSHA is commit abbreviated as git abbreviates it by default (7
// characters), for lines a person reads.
func ShortSHA(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}

// Line is the one line that tells what iteration it did, everywhere a
// person reads it: `starter run --follow`, `status`, the queue's events
// and its issue comment.
func (it IterationSummary) Line() string {
	count := func(n int, what string) string {
		if n == 1 {
			return "1 " + what
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	role := ""
	if it.Role != "" {
		role = " (" + it.Role + ")"
	}
	if it.Backend != "" {
		role += " on " + it.Backend + " (fallback)"
	}
	cost := fmt.Sprintf("$%.4f", it.CostUSD)
	if it.CostNote != "" {
		cost = "cost unknown"
	}
	line := fmt.Sprintf("iteration %d%s: %s, %s, %s, %s changed", it.Iteration, role, it.Outcome, cost,
		count(int(it.Tokens), "token"), count(it.FilesChanged, "file"))
	if it.Commit != "" {
		line += ", commit " + ShortSHA(it.Commit)
	} else {
		line += ", no commit"
	}
	if it.Story != "" {
		line += " [" + it.Story + "]"
	}
	if it.Claimed {
		if it.Verified {
			line += "; completion claimed and verified"
		} else {
			line += "; completion claimed, not verified"
		}
	}
	if it.Verdict != "" {
		line += "; verdict: " + it.Verdict
	}
	if it.Reason != "" && !strings.HasPrefix(it.NotCommitted, it.Reason) {
		line += " (" + it.Reason + ")"
	}
	if it.NotCommitted != "" {
		line += "; not committed: " + it.NotCommitted
	}
	if len(it.Refused) > 0 {
		line += "; network refused: " + strings.Join(it.Refused, ", ")
	}
	return line
}
