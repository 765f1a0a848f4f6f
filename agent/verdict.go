package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"regexp"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// MaxReasonLen bounds Verdict.Reason.
const MaxReasonLen = 400

// NewVerdict is a Verdict of o with reason on one line of at most
// MaxReasonLen bytes.
func NewVerdict(o contract.Outcome, reason string) Verdict {
	return Verdict{Outcome: o, Reason: words.Clip(reason, MaxReasonLen)}
}

// NotStarted reports whether exitErr, the error of an agent run, says the
// agent's binary could not be started: retrying cannot help.
func NotStarted(exitErr error) bool {
	return exitErr != nil && (errors.Is(exitErr, exec.ErrNotFound) || errors.Is(exitErr, fs.ErrNotExist))
}

// ExitCode is the exit status of the process that ended with err: 0 for
// nil, -1 for a process killed by a signal or an error that is not an
// exit.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode()
	}
	return -1
}

// ExitPhrase says how the process that ended with err ended, for "agent
// " to precede: "exited with status 2", "was killed (signal: killed)",
// or "failed: <error>".
func ExitPhrase(err error) string {
	if err == nil {
		return "exited with status 0"
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		if code := ee.ExitCode(); code >= 0 {
			return fmt.Sprintf("exited with status %d", code)
		}
		return "was killed (" + ee.String() + ")"
	}
	return "failed: " + err.Error()
}

// FirstMatch is the first of texts that one of res matches, "" if none
// does.
func FirstMatch(texts []string, res ...*regexp.Regexp) string {
	for _, t := range texts {
		for _, re := range res {
			if re.MatchString(t) {
				return t
			}
		}
	}
	return ""
}

// OrNone is s, or "(no message)" when s is empty.
func OrNone(s string) string {
	if s == "" {
		return "(no message)"
	}
	return s
}

// LastLine is the last line of s that is not blank at its end, trimmed:
// the last word of an agent's stderr.
func LastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	return s
}
