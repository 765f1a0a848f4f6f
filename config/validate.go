package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// validate reports every invalid setting of c, one error per setting.
func (c *Config) validate() error {
	var errs []error
	check := func(key string, bad bool, value any, reason string) {
		if bad {
			errs = append(errs, &fieldError{spec: lookupSpec(key), value: value, reason: reason})
		}
	}
	const (
		notEmpty   = "must not be empty"
		atLeastOne = "must be at least 1"
	)

	check("task-queue", strings.TrimSpace(c.TaskQueue) == "", c.TaskQueue, notEmpty)

	check("agent.backend", !slices.Contains(backendNames, c.Agent.Backend), c.Agent.Backend,
		fmt.Sprintf("must be one of %s", strings.Join(backendNames, ", ")))
	for _, role := range []struct {
		name string
		r    RoleConfig
	}{{"reviewer", c.Roles.Reviewer.Agent()}, {"planner", c.Roles.Planner}} {
		key := "roles." + role.name
		check(key+".backend", role.r.Backend != "" && !slices.Contains(backendNames, role.r.Backend), role.r.Backend,
			fmt.Sprintf("must be one of %s, or empty for agent.backend", strings.Join(backendNames, ", ")))
		check(key+".command", role.r.Backend == "command" && len(role.r.Command) == 0 && (c.Agent.Backend != "command"), role.r.Command,
			"must be set when "+key+".backend is command")
	}
	check("roles.reviewer.every", c.Roles.Reviewer.Every < 0, c.Roles.Reviewer.Every, "must not be negative (0 = only after completion claims)")
	if _, err := c.Agent.PriceTable(); err != nil {
		check("agent.prices", true, c.Agent.Prices, err.Error())
	}
	check("agent.max-turns", c.Agent.MaxTurns < 0, c.Agent.MaxTurns, "must not be negative (0 = unlimited)")
	for _, entry := range c.Agent.Env {
		name, _, _ := strings.Cut(entry, "=")
		if !envNameRE.MatchString(name) {
			check("agent.env", true, c.Agent.Env,
				fmt.Sprintf("entry %q must be NAME or NAME=value, where NAME is letters, digits and _, not starting with a digit", entry))
			break
		}
	}

	check("task.mode", c.Task.Mode != "" && !slices.Contains(taskModes, c.Task.Mode), c.Task.Mode,
		fmt.Sprintf("must be one of %s, or empty to detect it", strings.Join(taskModes, ", ")))

	check("task.instructions-file", c.Task.InstructionsFile != "" && !filepath.IsLocal(c.Task.InstructionsFile), c.Task.InstructionsFile,
		"must be a path inside the workspace, relative to it, such as RALPH.md")

	l := &c.Limits
	check("limits.max-iterations", l.MaxIterations < 1, l.MaxIterations, atLeastOne)
	check("limits.max-runtime", l.MaxRuntime < 0, l.MaxRuntime, "must not be negative (0 = no limit)")
	switch {
	case math.IsNaN(l.MaxCostUSD) || math.IsInf(l.MaxCostUSD, 0):
		check("limits.max-cost-usd", true, l.MaxCostUSD, "must be a finite number")
	case l.MaxCostUSD < 0:
		check("limits.max-cost-usd", true, l.MaxCostUSD, "must not be negative (0 = no limit)")
	}
	check("limits.max-consecutive-failures", l.MaxConsecutiveFailures < 1, l.MaxConsecutiveFailures, atLeastOne)
	check("limits.max-no-progress", l.MaxNoProgress < 1, l.MaxNoProgress, atLeastOne)
	check("limits.max-task-file-repairs", l.MaxTaskFileRepairs < 1, l.MaxTaskFileRepairs, atLeastOne)
	check("limits.heartbeat-timeout", l.HeartbeatTimeout < time.Second, l.HeartbeatTimeout, "must be at least 1s")
	check("limits.iteration-timeout", l.IterationTimeout <= l.HeartbeatTimeout, l.IterationTimeout,
		fmt.Sprintf("must be longer than limits.heartbeat-timeout (%s)", shortDuration(l.HeartbeatTimeout)))
	check("limits.iterations-per-run", l.IterationsPerRun < 1, l.IterationsPerRun, atLeastOne)

	cp := &c.Checkpoint
	check("checkpoint.every", cp.Every < 0, cp.Every, "must not be negative (0 = no checkpoints)")
	check("checkpoint.timeout", cp.Timeout < 0, cp.Timeout, "must not be negative (0 = no limit)")
	check("checkpoint.on-timeout", !slices.Contains(onTimeoutActions, cp.OnTimeout), cp.OnTimeout,
		fmt.Sprintf("must be one of %s", strings.Join(onTimeoutActions, ", ")))

	gh := &c.GitHub
	check("github.repo", gh.Repo != "" && !validRepo(gh.Repo), gh.Repo,
		"must be owner/name, each of letters, digits, -, _ and ., such as durable-ralph/ralph, or empty to take it from the origin remote")
	if _, reason := normalizeAPIURL(gh.APIURL); reason != "" {
		check("github.api-url", true, gh.APIURL, reason)
	}
	check("github.token-env", !envNameRE.MatchString(gh.TokenEnv), gh.TokenEnv,
		"must be the name of an environment variable: letters, digits and _, not starting with a digit")
	check("github.write-interval", gh.WriteInterval < 0, gh.WriteInterval, "must not be negative (0 = no spacing)")

	q := &c.Queue
	check("queue.label", strings.TrimSpace(q.Label) == "", q.Label, notEmpty)
	check("queue.label", strings.Contains(q.Label, ","), q.Label, "must not contain a comma: it is one label")
	check("queue.poll-interval", q.PollInterval < time.Second, q.PollInterval, "must be at least 1s")
	check("queue.max-issues", q.MaxIssues < 0, q.MaxIssues, "must not be negative (0 = no limit)")
	switch {
	case math.IsNaN(q.MaxCostUSD) || math.IsInf(q.MaxCostUSD, 0):
		check("queue.max-cost-usd", true, q.MaxCostUSD, "must be a finite number")
	case q.MaxCostUSD < 0:
		check("queue.max-cost-usd", true, q.MaxCostUSD, "must not be negative (0 = no limit)")
	}
	check("queue.base-branch", q.BaseBranch != "" && !validBranch(q.BaseBranch), q.BaseBranch,
		"must be a git branch name, or empty for the repository's default branch")

	d := &c.Dev
	_, err := netip.ParseAddr(d.IP)
	check("dev.ip", err != nil, d.IP, "must be an IP address such as 127.0.0.1")
	check("dev.port", d.Port < 1 || d.Port > 65535, d.Port, "must be between 1 and 65535")
	check("dev.ui-port", d.UIPort < 0 || d.UIPort > 65535, d.UIPort, "must be between 1 and 65535, or 0 for no UI")
	check("dev.ui-port", d.UIPort != 0 && d.UIPort == d.Port, d.UIPort, "must differ from dev.port")
	check("dev.namespace", strings.TrimSpace(d.Namespace) == "", d.Namespace, notEmpty)

	cd := &c.Codec
	keyFile := lookupSpec("codec.key-file")
	check("codec.key-env", cd.KeyEnv != "" && cd.KeyFile != "", cd.KeyEnv,
		fmt.Sprintf("must not be set together with codec.key-file (--%s, %s): choose one", keyFile.flag, keyFile.env()))
	check("codec.key-env", cd.KeyEnv != "" && !envNameRE.MatchString(cd.KeyEnv), cd.KeyEnv,
		"must be the name of an environment variable: letters, digits and _, not starting with a digit")
	if cd.Server != "" {
		_, port, err := net.SplitHostPort(cd.Server)
		n, perr := strconv.Atoi(port)
		switch {
		case err != nil:
			check("codec.server", true, cd.Server, "must be host:port, such as 127.0.0.1:8081")
		case perr != nil || n < 1 || n > 65535:
			check("codec.server", true, cd.Server, "must have a port between 1 and 65535")
		}
	}

	w := &c.Worker
	check("worker.host-id", !hostIDRE.MatchString(w.HostID), w.HostID,
		"must be letters, digits, '.', '_' and '-' (at most 63), such as the hostname")
	check("worker.host-timeout", w.HostTimeout < time.Second, w.HostTimeout, "must be at least 1s")
	check("worker.max-agents", w.MaxAgents < 1, w.MaxAgents, atLeastOne)
	if w.MetricsAddr != "" {
		_, port, err := net.SplitHostPort(w.MetricsAddr)
		n, perr := strconv.Atoi(port)
		switch {
		case err != nil:
			check("worker.metrics-addr", true, w.MetricsAddr, "must be host:port, such as 127.0.0.1:9464")
		case perr != nil || n < 0 || n > 65535:
			check("worker.metrics-addr", true, w.MetricsAddr, "must have a port between 0 and 65535")
		}
	}

	return errors.Join(errs...)
}

// hostIDRE matches a valid worker.host-id: it goes into task queue names
// and workflow IDs as it is.
var hostIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// validRepo reports whether repo is owner/name, each of letters, digits, -,
// _ and ".", and neither "." nor "..", which would change the meaning of an
// API path.
func validRepo(repo string) bool {
	if !repoRE.MatchString(repo) {
		return false
	}
	owner, name, _ := strings.Cut(repo, "/")
	return owner != "." && owner != ".." && name != "." && name != ".."
}

// normalizeAPIURL returns the GitHub API base URL s ending in "/", or the
// reason s is not an absolute http or https URL that paths can be appended
// to.
func normalizeAPIURL(s string) (string, string) {
	const want = "must be an absolute http or https URL, such as " + defaultGitHubAPIURL
	u, err := url.Parse(s)
	switch {
	case err != nil, u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.Opaque != "":
		return "", want
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", "must not have a query or fragment: it is the base that API paths are appended to"
	case u.User != nil:
		return "", "must not hold credentials: the token comes from github.token-env"
	}
	if !strings.HasSuffix(s, "/") {
		s += "/"
	}
	return s, ""
}

// validBranch reports whether name is a plausible git branch name: the rules
// of git check-ref-format that matter here, and no leading "-", which git
// would take for an option.
func validBranch(name string) bool {
	if name == "@" || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "/") ||
		strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") ||
		strings.Contains(name, "..") || strings.Contains(name, "//") || strings.Contains(name, "@{") {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("~^:?*[\\", r) {
			return false
		}
	}
	for part := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	return true
}
