package config

import "strings"

// patterns cleans a list of path patterns (git.protected-paths): space
// around each is dropped, and so are empty ones, so that an empty flag
// or variable value can say "none". The result is never nil: nil would
// mean the default to a session's input.
func patterns(list []string) []string {
	out := make([]string, 0, len(list))
	for _, p := range list {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
