package config

import (
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/egress"
	"github.com/durable-ralph/ralph/sandbox"

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
	"unicode"
)

// validation collects the invalid settings of a Config, one error per
// setting.
type validation struct{ errs []error }

// check records that key, set to value, is invalid for reason when bad.
func (v *validation) check(key string, bad bool, value any, reason string) {
	if bad {
		v.errs = append(v.errs, &fieldError{spec: lookupSpec(key), value: value, reason: reason})
	}
}

// checkCost checks a limit in USD: finite, and 0 or more.
func (v *validation) checkCost(key string, usd float64) {
	switch {
	case math.IsNaN(usd) || math.IsInf(usd, 0):
		v.check(key, true, usd, "must be a finite number")
	case usd < 0:
		v.check(key, true, usd, "must not be negative (0 = no limit)")
	}
}

// checkAddr checks a host:port to listen on, if set, whose port is at
// least minPort; example is one.
func (v *validation) checkAddr(key, addr, example string, minPort int) {
	if addr == "" {
		return
	}
	_, port, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	switch {
	case err != nil:
		v.check(key, true, addr, "must be host:port, such as "+example)
	case perr != nil || n < minPort || n > 65535:
		v.check(key, true, addr, fmt.Sprintf("must have a port between %d and 65535", minPort))
	}
}

// checkEnvName checks the name of an environment variable.
func (v *validation) checkEnvName(key, name string) {
	v.check(key, !envNameRE.MatchString(name), name,
		"must be the name of an environment variable: letters, digits and _, not starting with a digit")
}

// checkURL checks an absolute http or https URL, if set; example is one.
func (v *validation) checkURL(key, s, example string) {
	if s == "" {
		return
	}
	u, err := url.Parse(s)
	v.check(key, err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "", s,
		"must be an absolute http or https URL, such as "+example)
}

const (
	notEmpty   = "must not be empty"
	atLeastOne = "must be at least 1"
)

// validate reports every invalid setting of c, one error per setting.
func (c *Config) validate() error {
	var v validation
	v.check("task-queue", strings.TrimSpace(c.TaskQueue) == "", c.TaskQueue, notEmpty)
	c.validateAgent(&v)
	c.validateTask(&v)
	c.Limits.validate(&v)
	c.Checkpoint.validate(&v)
	c.GitHub.validate(&v)
	c.Queue.validate(&v)
	c.Dev.validate(&v)
	c.Codec.validate(&v)
	c.Worker.validate(&v)
	c.Notify.validate(&v)
	return errors.Join(v.errs...)
}

// validateFallback checks agent.fallback and agent.fallback-after.
func (c *Config) validateFallback(v *validation) {
	seen := map[string]bool{}
	for _, b := range c.Agent.Fallback {
		switch {
		case b == "command" || !slices.Contains(backendNames, b):
			v.check("agent.fallback", true, c.Agent.Fallback, fmt.Sprintf("entry %q must be claude, codex or gemini", b))
		case b == c.Agent.Backend:
			v.check("agent.fallback", true, c.Agent.Fallback, fmt.Sprintf("entry %q is agent.backend itself, which is limited when the fallback is needed", b))
		case seen[b]:
			v.check("agent.fallback", true, c.Agent.Fallback, fmt.Sprintf("entry %q is named twice", b))
		}
		seen[b] = true
	}
	v.check("agent.fallback-after", c.Agent.FallbackAfter < 0, c.Agent.FallbackAfter, "must not be negative")
}

// validateAgent checks agent.* and the agents of roles.*.
func (c *Config) validateAgent(v *validation) {
	v.check("agent.backend", !slices.Contains(backendNames, c.Agent.Backend), c.Agent.Backend,
		fmt.Sprintf("must be one of %s", strings.Join(backendNames, ", ")))
	for _, role := range []struct {
		name string
		r    RoleConfig
	}{{"reviewer", c.Roles.Reviewer.Agent()}, {"planner", c.Roles.Planner}} {
		key := "roles." + role.name
		v.check(key+".backend", role.r.Backend != "" && !slices.Contains(backendNames, role.r.Backend), role.r.Backend,
			fmt.Sprintf("must be one of %s, or empty for agent.backend", strings.Join(backendNames, ", ")))
		v.check(key+".command", role.r.Backend == "command" && len(role.r.Command) == 0 && (c.Agent.Backend != "command"), role.r.Command,
			"must be set when "+key+".backend is command")
	}
	c.validateFallback(v)
	c.validateSandbox(v)
	v.check("roles.reviewer.every", c.Roles.Reviewer.Every < 0, c.Roles.Reviewer.Every, "must not be negative (0 = only after completion claims)")
	if _, err := c.Agent.PriceTable(); err != nil {
		v.check("agent.prices", true, c.Agent.Prices, err.Error())
	}
	v.check("agent.max-turns", c.Agent.MaxTurns < 0, c.Agent.MaxTurns, "must not be negative (0 = unlimited)")
	for _, entry := range c.Agent.Env {
		name, _, _ := strings.Cut(entry, "=")
		if !envNameRE.MatchString(name) {
			v.check("agent.env", true, c.Agent.Env,
				fmt.Sprintf("entry %q must be NAME or NAME=value, where NAME is letters, digits and _, not starting with a digit", entry))
			break
		}
	}
}

// validateSandbox checks agent.sandbox, agent.network and the lists
// that go with them.
func (c *Config) validateSandbox(v *validation) {
	a := c.Agent
	v.check("agent.sandbox", !sandbox.ValidMode(a.Sandbox), a.Sandbox,
		fmt.Sprintf("must be one of %s", strings.Join(sandbox.Modes, ", ")))
	v.check("agent.network", !sandbox.ValidNetwork(a.Network), a.Network,
		fmt.Sprintf("must be one of %s", strings.Join(sandbox.Networks, ", ")))
	for _, h := range a.NetworkAllow {
		err := egress.Policy{Allow: []string{h}}.Validate()
		v.check("agent.network-allow", err != nil, h,
			"must be a host, host:port or *.domain, without a scheme or path (such as api.anthropic.com or 127.0.0.1:8080)")
	}
	for _, l := range []struct {
		key   string
		paths []string
	}{{"agent.sandbox-ro", a.SandboxRO}, {"agent.sandbox-rw", a.SandboxRW}} {
		for _, p := range l.paths {
			v.check(l.key, !filepath.IsAbs(p), p, "must be an absolute path or start with ~/")
		}
	}
	v.check("agent.limits.processes", a.Limits.Processes < 16, a.Limits.Processes,
		"must be at least 16: an agent CLI and its tools take a dozen processes and threads")
	for _, l := range []struct{ key, value string }{{"agent.limits.memory", a.Limits.Memory}, {"agent.limits.tmp", a.Limits.Tmp}} {
		n, err := sandbox.ParseSize(l.value)
		v.check(l.key, err != nil || n < 16<<20, l.value, "must be a size of at least 16MiB, such as 512MiB or 4GiB")
	}
}

// validateTask checks task.*.
func (c *Config) validateTask(v *validation) {
	v.check("task.mode", c.Task.Mode != "" && !slices.Contains(taskModes, c.Task.Mode), c.Task.Mode,
		fmt.Sprintf("must be one of %s, or empty to detect it", strings.Join(taskModes, ", ")))
	v.check("task.instructions-file", c.Task.InstructionsFile != "" && !filepath.IsLocal(c.Task.InstructionsFile), c.Task.InstructionsFile,
		"must be a path inside the workspace, relative to it, such as RALPH.md")
}

// validate checks limits.*.
func (l *Limits) validate(v *validation) {
	v.check("limits.max-iterations", l.MaxIterations < 1, l.MaxIterations, atLeastOne)
	v.check("limits.max-runtime", l.MaxRuntime < 0, l.MaxRuntime, "must not be negative (0 = no limit)")
	v.checkCost("limits.max-cost-usd", l.MaxCostUSD)
	v.check("limits.max-consecutive-failures", l.MaxConsecutiveFailures < 1, l.MaxConsecutiveFailures, atLeastOne)
	v.check("limits.max-no-progress", l.MaxNoProgress < 1, l.MaxNoProgress, atLeastOne)
	v.check("limits.max-task-file-repairs", l.MaxTaskFileRepairs < 1, l.MaxTaskFileRepairs, atLeastOne)
	v.check("limits.heartbeat-timeout", l.HeartbeatTimeout < time.Second, l.HeartbeatTimeout, "must be at least 1s")
	v.check("limits.iteration-timeout", l.IterationTimeout <= l.HeartbeatTimeout, l.IterationTimeout,
		fmt.Sprintf("must be longer than limits.heartbeat-timeout (%s)", shortDuration(l.HeartbeatTimeout)))
	v.check("limits.iterations-per-run", l.IterationsPerRun < 1, l.IterationsPerRun, atLeastOne)
	v.check("limits.on-limit", l.OnLimit != "" && !slices.Contains(contract.OnLimitActions, l.OnLimit), l.OnLimit,
		"must be end or ask")
}

// validate checks checkpoint.*.
func (cp *CheckpointConfig) validate(v *validation) {
	v.check("checkpoint.every", cp.Every < 0, cp.Every, "must not be negative (0 = no checkpoints)")
	v.check("checkpoint.timeout", cp.Timeout < 0, cp.Timeout, "must not be negative (0 = no limit)")
	v.check("checkpoint.on-timeout", !slices.Contains(onTimeoutActions, cp.OnTimeout), cp.OnTimeout,
		fmt.Sprintf("must be one of %s", strings.Join(onTimeoutActions, ", ")))
}

// validate checks github.*.
func (gh *GitHubConfig) validate(v *validation) {
	v.check("github.repo", gh.Repo != "" && !validRepo(gh.Repo), gh.Repo,
		"must be owner/name, each of letters, digits, -, _ and ., such as durable-ralph/ralph, or empty to take it from the origin remote")
	if _, reason := normalizeAPIURL(gh.APIURL); reason != "" {
		v.check("github.api-url", true, gh.APIURL, reason)
	}
	v.checkEnvName("github.token-env", gh.TokenEnv)
	if _, err := gh.FileToken(); err != nil {
		v.errs = append(v.errs, err)
	}
	gh.validateApp(v)
	v.check("github.write-interval", gh.WriteInterval < 0, gh.WriteInterval, "must not be negative (0 = no spacing)")
	v.checkAddr("github.webhook-listen", gh.WebhookListen, "127.0.0.1:8090", 0)
	v.checkEnvName("github.webhook-secret-env", gh.WebhookSecretEnv)
}

// maxParallel bounds queue.parallel: each issue worked on holds a work
// tree, a session and an agent (worker.max-agents caps the agents too).
const maxParallel = 16

// validate checks queue.*.
func (q *QueueConfig) validate(v *validation) {
	v.check("queue.label", strings.TrimSpace(q.Label) == "", q.Label, notEmpty)
	v.check("queue.label", strings.Contains(q.Label, ","), q.Label, "must not contain a comma: it is one label")
	v.check("queue.poll-interval", q.PollInterval < time.Second, q.PollInterval, "must be at least 1s")
	v.check("queue.max-issues", q.MaxIssues < 0, q.MaxIssues, "must not be negative (0 = no limit)")
	v.check("queue.parallel", q.Parallel < 1 || q.Parallel > maxParallel, q.Parallel, fmt.Sprintf("must be from 1 to %d", maxParallel))
	v.checkCost("queue.max-cost-usd", q.MaxCostUSD)
	v.checkCost("queue.max-cost-per-day", q.MaxCostPerDay)
	v.check("queue.base-branch", q.BaseBranch != "" && !validBranch(q.BaseBranch), q.BaseBranch,
		"must be a git branch name, or empty for the repository's default branch")
	v.check("queue.max-fix-rounds", q.MaxFixRounds < 0, q.MaxFixRounds, "must not be negative (0 = no fix round)")
	v.check("queue.max-review-rounds", q.MaxReviewRounds < 0, q.MaxReviewRounds, "must not be negative (0 = no review round)")
	v.check("queue.checks-timeout", q.ChecksTimeout < 0, q.ChecksTimeout, "must not be negative (0 = no limit)")
	v.check("queue.merge-method", !slices.Contains([]string{contract.MergeSquash, contract.MergeMerge, contract.MergeRebase}, q.MergeMethod), q.MergeMethod,
		"must be one of squash, merge, rebase")
	v.check("queue.update-strategy", !slices.Contains([]string{contract.UpdateByMerge, contract.UpdateByRebase}, q.UpdateStrategy), q.UpdateStrategy,
		"must be one of merge, rebase")
	for _, b := range q.TrustedBots {
		v.check("queue.trusted-bots", strings.TrimSpace(b) == "" || strings.ContainsAny(b, " ,/"), b, "must be a bot's login, such as dependabot[bot]")
	}
}

// validate checks dev.*.
func (d *DevConfig) validate(v *validation) {
	_, err := netip.ParseAddr(d.IP)
	v.check("dev.ip", err != nil, d.IP, "must be an IP address such as 127.0.0.1")
	v.check("dev.port", d.Port < 1 || d.Port > 65535, d.Port, "must be between 1 and 65535")
	v.check("dev.ui-port", d.UIPort < 0 || d.UIPort > 65535, d.UIPort, "must be between 1 and 65535, or 0 for no UI")
	v.check("dev.ui-port", d.UIPort != 0 && d.UIPort == d.Port, d.UIPort, "must differ from dev.port")
	v.check("dev.namespace", strings.TrimSpace(d.Namespace) == "", d.Namespace, notEmpty)
}

// validate checks codec.*.
func (cd *CodecConfig) validate(v *validation) {
	keyFile := lookupSpec("codec.key-file")
	v.check("codec.key-env", cd.KeyEnv != "" && cd.KeyFile != "", cd.KeyEnv,
		fmt.Sprintf("must not be set together with codec.key-file (--%s, %s): choose one", keyFile.flag, keyFile.env()))
	if cd.KeyEnv != "" {
		v.checkEnvName("codec.key-env", cd.KeyEnv)
	}
	v.checkAddr("codec.server", cd.Server, "127.0.0.1:8081", 1)
}

// validate checks worker.*.
func (w *WorkerConfig) validate(v *validation) {
	v.check("worker.host-id", !hostIDRE.MatchString(w.HostID), w.HostID,
		"must be letters, digits, '.', '_' and '-' (at most 63), such as the hostname")
	v.check("worker.host-timeout", w.HostTimeout < time.Second, w.HostTimeout, "must be at least 1s")
	v.check("worker.max-agents", w.MaxAgents < 1, w.MaxAgents, atLeastOne)
	v.checkAddr("worker.metrics-addr", w.MetricsAddr, "127.0.0.1:9464", 0)
}

// validate checks notify.*.
func (n *NotifyConfig) validate(v *validation) {
	v.check("notify.events", len(n.Events) == 0, n.Events,
		"must name at least one event; to send nothing, configure no channel")
	for _, e := range n.Events {
		v.check("notify.events", !slices.Contains(notifyEvents, e), e,
			fmt.Sprintf("must be one of %s", strings.Join(notifyEvents, ", ")))
	}
	v.check("notify.max-age", n.MaxAge < 0, n.MaxAge, "must not be negative (0 = give up at the first failure)")
	v.checkURL("notify.ui-url", n.UIURL, "http://127.0.0.1:8233")
	v.checkEnvName("notify.telegram.token-env", n.Telegram.TokenEnv)
	for _, id := range n.Telegram.ChatIDs {
		v.check("notify.telegram.chat-ids", id == 0, id, "must be a chat's ID, such as 123456789, not 0")
	}
	v.check("notify.telegram.api-url", n.Telegram.APIURL == "", n.Telegram.APIURL, notEmpty)
	v.checkURL("notify.telegram.api-url", n.Telegram.APIURL, defaultTelegramAPIURL)
	v.checkEnvName("notify.slack.webhook-url-env", n.Slack.WebhookURLEnv)
	v.checkEnvName("notify.slack.bot-token-env", n.Slack.BotTokenEnv)
	v.check("notify.slack.channel", strings.ContainsFunc(n.Slack.Channel, unicode.IsSpace), n.Slack.Channel,
		"must be a channel's name or ID, such as #ralph, without white space")
	v.check("notify.slack.api-url", n.Slack.APIURL == "", n.Slack.APIURL, notEmpty)
	v.checkURL("notify.slack.api-url", n.Slack.APIURL, defaultSlackAPIURL)
	v.checkAddr("notify.slack.commands-listen", n.Slack.CommandsListen, "127.0.0.1:8091", 0)
	v.checkEnvName("notify.slack.signing-secret-env", n.Slack.SigningSecretEnv)
	n.validateWorkspaces(v)
	v.checkURL("notify.webhook.url", n.Webhook.URL, "https://example.com/hooks/ralph")
	v.checkEnvName("notify.webhook.secret-env", n.Webhook.SecretEnv)
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
