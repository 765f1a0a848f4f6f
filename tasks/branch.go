package tasks

import (
	"errors"
	"fmt"
	"strings"
)

// CheckBranchName checks name, prd.json's branchName, against git's rules
// for a branch name (git check-ref-format --branch), which the worker
// applies when it checks the branch out at a session's start: a name it
// would refuse is refused before the session starts, saying why.
func CheckBranchName(name string) error {
	switch {
	case name == "":
		return errors.New("it is empty")
	case name == "HEAD":
		return errors.New("HEAD names the current commit, not a branch")
	case strings.HasPrefix(name, "-"):
		return errors.New("it starts with -, which git would take for an option")
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/"):
		return errors.New("it starts or ends with /")
	case strings.HasSuffix(name, "."):
		return errors.New("it ends with a dot")
	case strings.Contains(name, "//"):
		return errors.New("it has two slashes in a row")
	case strings.Contains(name, ".."):
		return errors.New("it has two dots in a row")
	case strings.Contains(name, "@{"):
		return errors.New("it has @{")
	}
	for _, r := range name {
		switch {
		case r == ' ':
			return errors.New("it has a space")
		case r < ' ' || r == 0x7f:
			return fmt.Errorf("it has the control character %q", r)
		case strings.ContainsRune("~^:?*[\\", r):
			return fmt.Errorf("it has %q", r)
		}
	}
	for part := range strings.SplitSeq(name, "/") {
		switch {
		case strings.HasPrefix(part, "."):
			return fmt.Errorf("its part %q starts with a dot", part)
		case strings.HasSuffix(part, ".lock"):
			return fmt.Errorf("its part %q ends with .lock", part)
		}
	}
	return nil
}
