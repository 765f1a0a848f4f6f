package issue

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// Validate checks a queue's settings and its template of the issues'
// sessions.
func Validate(s contract.QueueSettings, tmpl contract.SessionInput) error {
	var problems []string
	if s.Repo.Owner == "" || s.Repo.Name == "" {
		problems = append(problems, "repository owner and name are required")
	}
	if s.Clone == "" || !filepath.IsAbs(s.Clone) {
		problems = append(problems, fmt.Sprintf("clone %q must be an absolute path", s.Clone))
	}
	if strings.TrimSpace(s.Label) == "" {
		problems = append(problems, "the ready label is empty")
	}
	if s.PollInterval < time.Second {
		problems = append(problems, "the poll interval must be at least 1s")
	}
	if s.MaxIssues < 0 || s.MaxCostUSD < 0 {
		problems = append(problems, "max issues and max cost must not be negative")
	}
	tmpl.Workspace = s.Clone
	if err := tmpl.Validate(); err != nil {
		problems = append(problems, "session template: "+err.Error())
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid queue input: %s", strings.Join(problems, "; "))
	}
	return nil
}

// ChildAttributes are the search attributes the workflows of issue
// number of a queue with settings s start with: an issue's session,
// IssueWork and follower.
func ChildAttributes(s contract.QueueSettings, host string, number int) []temporal.SearchAttributeUpdate {
	attrs := []temporal.SearchAttributeUpdate{flow.SearchRepo.ValueSet(s.Repo.FullName()), flow.SearchIssue.ValueSet(int64(number))}
	if host != "" {
		attrs = append(attrs, flow.SearchHost.ValueSet(host))
	}
	return attrs
}
