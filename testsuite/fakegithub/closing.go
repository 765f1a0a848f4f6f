package fakegithub

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// closingRef matches one of GitHub's closing keywords, an optional colon,
// and the issue it names: #N, owner/name#N, or the URL of an issue. Its
// groups are the owner/name before "#", the URL up to the owner, the
// owner/name of the URL, and the number.
var closingRef = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)(?::[ \t]*|[ \t]+)` +
	`(?:([\w.-]+/[\w.-]+)?#|(https?://[^\s/]+/)([\w.-]+/[\w.-]+)/issues/)(\d+)\b`)

// closingRefs are the numbers that text names after a closing keyword
// (see closingRef) in this repository, each once, in order. A URL is
// that of an issue on github.com or on the fake's host.
func (s *Server) closingRefs(text string) []int {
	var out []int
	for _, m := range closingRef.FindAllStringSubmatch(text, -1) {
		repo := m[1]
		if m[2] != "" {
			if !strings.EqualFold(m[2], "https://github.com/") && !strings.EqualFold(m[2], s.URL()) {
				continue
			}
			repo = m[3]
		}
		if repo != "" && !strings.EqualFold(repo, s.owner+"/"+s.name) {
			continue
		}
		n, err := strconv.Atoi(m[4])
		if err == nil && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// closeReferenced closes, when pull request is was merged into the
// default branch as commit by login at at, each open issue (not a pull
// request) that its body names after a closing keyword: as completed,
// by login, with a "closed" event of commit (and a delivery, see
// SetWebhook).
func (s *Server) closeReferenced(is *issue, commit, login string, at time.Time) {
	if is.pull.base != DefaultBranch {
		return
	}
	for _, n := range s.closingRefs(is.body) {
		ref := s.findIssue(n)
		if ref == nil || ref.pull != nil || ref.state != "open" {
			continue
		}
		if e := s.setState(ref, "closed", "completed", login, at); e != nil {
			e.commit = commit
		}
	}
}
