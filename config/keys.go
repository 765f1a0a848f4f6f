package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
)

// Key documents one configuration setting, for docs/configuration.md and --help.
type Key struct {
	// Key is the dotted key used in ralph.yaml, e.g. "limits.max-iterations".
	Key string
	// Flag is the command-line flag name without dashes, e.g. "max-iterations".
	Flag string
	// Env is the environment variable, e.g. "RALPH_LIMITS_MAX_ITERATIONS".
	Env string
	// Default is the default value as a user would write it, e.g. "4h".
	Default string
	// Description says what the setting does.
	Description string
	// Trusted reports a setting that the workspace's ralph.yaml may not set:
	// only flags, environment variables, a file named by --config or
	// RALPH_CONFIG, and the user config file may.
	Trusted bool
	// Repeat says the flag is given once per value.
	Repeat bool
	// Group is the group of flags it belongs to, which says the commands
	// that take it.
	Group Group
	// Doc is its default and the meaning of its values for
	// docs/configuration.md, in Markdown.
	Doc string
}

// Keys returns the documented table of configuration keys, in the order they
// appear in the package documentation.
func Keys() []Key {
	keys := make([]Key, len(specs))
	for i, s := range specs {
		keys[i] = Key{
			Key:         s.key,
			Flag:        s.flag,
			Env:         s.env(),
			Default:     s.defaultText(),
			Description: s.usage,
			Trusted:     s.trusted,
			Repeat:      s.kind == kindArgs || s.kind == kindInt64s,
			Group:       s.group(),
			Doc:         keyDocs[s.key],
		}
	}
	return keys
}

// kind is how a setting is spelled on the command line and decoded.
type kind int

const (
	kindString   kind = iota
	kindInt           // int
	kindFloat         // float64
	kindBool          // bool
	kindDuration      // time.Duration
	kindCommand       // one string flag, split into []string
	kindArgs          // repeatable string flag, []string
	kindInt64s        // repeatable whole-number flag, []int64
)

// want describes the values a kind accepts, for decoding errors.
func (k kind) want() string {
	switch k {
	case kindInt:
		return "must be a whole number"
	case kindFloat:
		return "must be a number"
	case kindBool:
		return "must be true or false"
	case kindDuration:
		return "must be a duration such as 90s, 30m or 4h"
	case kindCommand:
		return "must be a command line"
	case kindArgs:
		return "must be a list of arguments"
	case kindInt64s:
		return "must be a list of whole numbers"
	default:
		return "must be a string"
	}
}

// spec defines one setting: its key, flag, default and documentation.
type spec struct {
	key   string
	flag  string
	kind  kind
	def   any    // typed default value; its type matches kind
	text  string // default as documented, if def does not say it well
	usage string
	// trusted marks a setting that decides where the Temporal server
	// listens, where its state is or what the worker exposes, such as which
	// credential it sends where. A repository must not choose it, so the
	// workspace's ralph.yaml may not set it.
	trusted bool
}

// env returns the environment variable that sets s, as AutomaticEnv derives it.
func (s *spec) env() string {
	return envPrefix + "_" + envReplacer.Replace(strings.ToUpper(s.key))
}

// index returns the position of s in specs.
func (s *spec) index() int {
	for i := range specs {
		if &specs[i] == s {
			return i
		}
	}
	panic("config: spec not in specs: " + s.key)
}

// defaultText returns the default as a user would write it.
func (s *spec) defaultText() string {
	if s.text != "" {
		return s.text
	}
	switch d := s.def.(type) {
	case time.Duration:
		return shortDuration(d)
	case []string:
		return strings.Join(d, " ")
	case []int64:
		if len(d) == 0 {
			return "none"
		}
		return strings.Trim(fmt.Sprint(d), "[]")
	default:
		return fmt.Sprint(d)
	}
}

// shortDuration formats d without zero trailing units: 4h rather than 4h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

const (
	envPrefix = "RALPH"
	// configFlag and configEnv name the config file. They are not keys:
	// the file cannot name itself.
	configFlag = "config"
	configEnv  = "RALPH_CONFIG"
	// fileName is the config file looked for in the workspace.
	fileName = "ralph.yaml"
	// stateDirName is the directory under $XDG_STATE_HOME for dev.state-dir,
	// and the directory under $XDG_CONFIG_HOME of the user config file.
	stateDirName = "durable-ralph"
	// userFileName is the user config file in that directory.
	userFileName = "config.yaml"
)

// envNameRE matches the name of an environment variable, for agent.env,
// codec.key-env and github.token-env.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// repoRE matches github.repo: owner/name, each letters, digits, -, _ and ".".
var repoRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

const (
	// defaultGitHubAPIURL is the default of github.api-url.
	defaultGitHubAPIURL = "https://api.github.com/"
	// defaultGitHubTokenEnv is the default of github.token-env, and
	// fallbackGitHubTokenEnv the variable tried when it is empty.
	defaultGitHubTokenEnv  = "GITHUB_TOKEN"
	fallbackGitHubTokenEnv = "GH_TOKEN"
	// defaultWebhookSecretEnv is the default of github.webhook-secret-env.
	defaultWebhookSecretEnv = "RALPH_GITHUB_WEBHOOK_SECRET"
	// defaultTelegramAPIURL and defaultSlackAPIURL are the defaults of
	// notify.telegram.api-url and notify.slack.api-url.
	defaultTelegramAPIURL = "https://api.telegram.org"
	defaultSlackAPIURL    = "https://slack.com/api/"
)

// notifyEvents are the names of the events of notify.events, in the
// order of the docs.
var notifyEvents = func() []string {
	names := make([]string, len(contract.NotifyEvents))
	for i, e := range contract.NotifyEvents {
		names[i] = string(e)
	}
	return names
}()

// envReplacer maps a key to its environment variable suffix.
var envReplacer = strings.NewReplacer("-", "_", ".", "_")

// taskModes are the valid values of task.mode besides "" (auto-detect).
var taskModes = []string{"prd", "progress", "prompt"}

// onTimeoutActions are the valid values of checkpoint.on-timeout.
var onTimeoutActions = []string{"continue", "stop"}

// specs lists every setting. Every key has a default so that viper's
// Unmarshal sees keys set only in the environment (spf13/viper#761).
// Keep in step with Config, AddFlags and doc.go; the tests check all three.
var specs = slices.Concat([]spec{
	{key: "workspace", flag: "workspace", kind: kindString, def: "",
		text:  `"" (current directory)`,
		usage: "directory of the repository the agent works in (default: the current directory)"},
	{key: "task-queue", flag: "task-queue", kind: kindString, def: "ralph", trusted: true,
		usage: "Temporal task queue of the workflow and its worker"},

	{key: "agent.backend", flag: "backend", kind: kindString, def: "claude",
		usage: "kind of agent: claude (Claude Code), codex (OpenAI Codex CLI), gemini (Gemini CLI) or command (any command that reads the prompt on stdin and prints text)"},
	{key: "agent.command", flag: "agent-command", kind: kindCommand, def: "",
		text:  `"" (the backend's CLI: claude, codex or gemini)`,
		usage: "agent command line; split on spaces, quotes group words (default: the backend's CLI; required for the command backend)"},
	{key: "agent.model", flag: "model", kind: kindString, def: "",
		text:  `"" (agent's default)`,
		usage: "model the agent uses (default: the agent's own)"},
	{key: "agent.max-turns", flag: "max-turns", kind: kindInt, def: 0,
		usage: "maximum agent turns in one iteration (0 = unlimited)"},
	{key: "agent.args", flag: "agent-arg", kind: kindArgs, def: []string{},
		text:  "none",
		usage: "extra agent argument (repeatable; the environment variable is space separated)"},
	{key: "agent.fallback", flag: "fallback", kind: kindArgs, def: []string{},
		text:  "none (wait for the limit to reset)",
		usage: "backend the executor's following iterations run on when its usage limit resets later than agent.fallback-after from now: claude, codex or gemini, with its own CLI and default model, tried in order until the limit resets (repeatable; the environment variable is space separated)"},
	{key: "agent.fallback-after", flag: "fallback-after", kind: kindDuration, def: 15 * time.Minute,
		usage: "a usage limit that resets later than this from now moves the iterations to agent.fallback; one that resets sooner is waited for"},
	{key: "agent.prices", flag: "agent-price", kind: kindArgs, def: []string{},
		text:  "none (built-in prices of current OpenAI and Google models)",
		usage: "price of a model for backends whose agent reports tokens but no cost, as MODEL=INPUT/CACHED/OUTPUT in US dollars per million tokens, such as gpt-5.1-codex=1.25/0.125/10 (repeatable)"},
	{key: "agent.env", flag: "agent-env", kind: kindArgs, def: []string{}, trusted: true,
		text:  "none",
		usage: "extra environment variable for the agent beyond the built-in allow-list: NAME passes the worker's variable, NAME=value sets it (repeatable; the environment variable is space separated)"},
	{key: "agent.sandbox", flag: "sandbox", kind: kindString, def: "", trusted: true,
		text:  `"" (auto; required for starter queue)`,
		usage: "containment of agent runs: auto (bubblewrap when the worker has it, else uncontained with a warning), required (an agent run that cannot be contained fails) or off (default: auto; required for starter queue)"},
	{key: "agent.network", flag: "network", kind: kindString, def: "internet", trusted: true,
		usage: "network of a contained agent run: internet (public hosts and agent.network-allow, through the worker's proxy; never the host's loopback or private addresses), allow-list (agent.network-allow and the backend's model API only), none, or open (the host's network)"},
	{key: "agent.network-allow", flag: "network-allow", kind: kindArgs, def: []string{}, trusted: true,
		text:  "none (the backend's model API host is always allowed)",
		usage: "host a contained agent may reach besides the backend's model API: host, host:port or *.domain; under internet it may be private, such as a local model server (repeatable; the environment variable is space separated)"},
	{key: "agent.sandbox-ro", flag: "sandbox-ro", kind: kindArgs, def: []string{}, trusted: true,
		text:  "none",
		usage: "path a contained agent may read, such as a toolchain cache (~/go/pkg/mod); the agent reads everything under it (repeatable; the environment variable is space separated)"},
	{key: "agent.sandbox-rw", flag: "sandbox-rw", kind: kindArgs, def: []string{}, trusted: true,
		text:  "none",
		usage: "path a contained agent may read and write, such as ~/.npm; whatever it holds the agent can read, change or take, and a change outlives the run (repeatable; the environment variable is space separated)"},
	{key: "agent.limits.processes", flag: "limit-processes", kind: kindInt, def: sandbox.DefaultProcesses, trusted: true,
		usage: "most processes and threads a contained agent run may have at once (a control group, or RLIMIT_NPROC in its user namespace)"},
	{key: "agent.limits.memory", flag: "limit-memory", kind: kindString, def: sandbox.FormatSize(sandbox.DefaultMemory), trusted: true,
		usage: "most memory a contained agent run's processes may use together, such as 4GiB (a control group; where the worker can make none, each process's RLIMIT_DATA)"},
	{key: "agent.limits.tmp", flag: "limit-tmp", kind: kindString, def: sandbox.FormatSize(sandbox.DefaultTmp), trusted: true,
		usage: "size of each file system in memory of a contained agent run (/tmp, its home directory, /dev/shm), such as 1GiB"},
	{key: "agent.reset-interrupted", flag: "reset-interrupted", kind: kindBool, def: false,
		usage: "when an iteration's worker died and its agent session cannot be resumed, reset the workspace to the iteration's start instead of keeping the partial changes"},

	{key: "task.mode", flag: "mode", kind: kindString, def: "",
		text:  `"" (auto-detect)`,
		usage: "where the task comes from: prd, progress or prompt (default: detect from the workspace)"},
	{key: "task.completion-promise", flag: "completion-promise", kind: kindString, def: "",
		text:  `"" (mode's default)`,
		usage: "text the agent prints when all work is done (default: the mode's)"},
	{key: "task.check-command", flag: "check-command", kind: kindString, def: "",
		text:  `"" (no check)`,
		usage: "shell command, run with sh -c in the workspace, that must exit 0 for the agent's claim that all work is done to count (default: no check)"},

	{key: "task.instructions-file", flag: "instructions-file", kind: kindString, def: "",
		text:  `"" (none)`,
		usage: "file of the workspace, such as RALPH.md, whose text every prompt carries as the project's instructions (default: none)"},

	{key: "limits.max-iterations", flag: "max-iterations", kind: kindInt, def: 100,
		usage: "stop after this many iterations"},
	{key: "limits.max-runtime", flag: "max-runtime", kind: kindDuration, def: 4 * time.Hour,
		usage: "stop after this much wall-clock time (0 = no limit)"},
	{key: "limits.max-cost-usd", flag: "max-cost", kind: kindFloat, def: 50.0,
		usage: "stop once the agent has spent this many US dollars (0 = no limit)"},
	{key: "limits.max-consecutive-failures", flag: "max-consecutive-failures", kind: kindInt, def: 3,
		usage: "stop after this many failed iterations in a row"},
	{key: "limits.max-no-progress", flag: "max-no-progress", kind: kindInt, def: 3,
		usage: "stop after this many iterations in a row without progress"},
	{key: "limits.max-task-file-repairs", flag: "max-task-file-repairs", kind: kindInt, def: 2,
		usage: "iterations in a row that may try to repair a task file the agent made unreadable before the session ends as task_file_invalid"},
	{key: "limits.iteration-timeout", flag: "iteration-timeout", kind: kindDuration, def: 30 * time.Minute,
		usage: "time limit of one agent iteration"},
	{key: "limits.heartbeat-timeout", flag: "heartbeat-timeout", kind: kindDuration, def: 10 * time.Second,
		usage: "Temporal heartbeat timeout of a running agent"},
	{key: "limits.iterations-per-run", flag: "iterations-per-run", kind: kindInt, def: 25,
		usage: "continue the workflow as new after this many iterations"},
	{key: "limits.on-limit", flag: "on-limit", kind: kindString, def: "",
		text:  `"" (end for run, ask for the queue's issues)`,
		usage: "what a session does at max cost, iterations or runtime: end (ends it limited) or ask (asks a person, through every channel a question goes, to raise the limit or stop, and waits) (default: end for run, ask for the queue's issues)"},

	{key: "git.auto-commit", flag: "auto-commit", kind: kindBool, def: true,
		usage: "commit the agent's changes after each iteration"},
	{key: "git.allow-dirty", flag: "allow-dirty", kind: kindBool, def: false,
		usage: "start even if the workspace has uncommitted changes"},
	{key: "git.protected-paths", flag: "protected-path", kind: kindArgs, def: []string{".github/workflows/**"}, trusted: true,
		usage: "path the agent may not change, as a pattern where ** is any number of directories and * any part of a name, such as deploy/**: an iteration that changes one is not committed, its work kept as .ralph/protected/iteration-N.patch (repeatable; the environment variable is space separated; an empty pattern, or [] in a file, protects nothing)"},

	{key: "checkpoint.every", flag: "checkpoint-every", kind: kindInt, def: 0,
		usage: "iterations between checkpoints, where a human reviews the work (0 = no checkpoints)"},
	{key: "checkpoint.before-complete", flag: "confirm-complete", kind: kindBool, def: false,
		usage: "ask a human to confirm before a session ends complete"},
	{key: "checkpoint.timeout", flag: "checkpoint-timeout", kind: kindDuration, def: time.Duration(0),
		usage: "how long a checkpoint waits for an answer (0 = as long as it takes)"},
	{key: "checkpoint.on-timeout", flag: "checkpoint-on-timeout", kind: kindString, def: "continue",
		usage: "what an unanswered checkpoint does: continue (telling the agent nobody answered) or stop (ending the session as checkpoint_timeout)"},

	{key: "roles.reviewer.enabled", flag: "review", kind: kindBool, def: false,
		usage: "after every completion claim the task file accepts, run a reviewer that checks the acceptance criteria without changing code; the session completes only when it passes the work"},
	{key: "roles.reviewer.every", flag: "review-every", kind: kindInt, def: 0,
		usage: "also run the reviewer after every N executor iterations; implies roles.reviewer.enabled (0 = only after completion claims)"},
}, roleSpecs("reviewer",
	"backend of the reviewer: claude, codex, gemini or command (default: agent.backend)",
	"instructions the reviewer gets besides Ralph's, such as what else to check",
), roleSpecs("planner",
	"backend of the planner of starter plan (default: agent.backend)",
	"instructions the planner gets besides Ralph's, such as how big a story may be",
), []spec{
	{key: "github.repo", flag: "repo", kind: kindString, def: "",
		text:  `"" (from the clone's origin URL)`,
		usage: "GitHub repository as owner/name (default: from the URL of the workspace's origin remote)"},
	{key: "github.api-url", flag: "github-api-url", kind: kindString, def: defaultGitHubAPIURL, trusted: true,
		usage: "base URL of the GitHub REST API, such as https://github.example.com/api/v3/ for GitHub Enterprise Server; the token is sent there"},
	{key: "github.token-env", flag: "github-token-env", kind: kindString, def: defaultGitHubTokenEnv, trusted: true,
		text:  defaultGitHubTokenEnv + " (then " + fallbackGitHubTokenEnv + ")",
		usage: "name of the environment variable holding the GitHub token; with " + defaultGitHubTokenEnv + ", " + fallbackGitHubTokenEnv + " is used when it is empty"},
	{key: "github.token-file", flag: "github-token-file", kind: kindString, def: "", trusted: true,
		text:  `"" (the variable of github.token-env)`,
		usage: "file holding the GitHub token, which the worker reads when it starts, instead of the variable of github.token-env (a variable stays readable in the shell that exported it, /proc/<pid>/environ); it must be readable by its owner alone (chmod 600 FILE); when both are set, the file wins; a leading ~ is expanded"},
	{key: "github.app-id", flag: "github-app-id", kind: kindInt, def: 0, trusted: true,
		text:  "0 (none: a token)",
		usage: "ID of the GitHub App the worker authenticates as, with github.app-installation-id and github.app-private-key-file, instead of a token (0 = none); when both are configured, the app wins"},
	{key: "github.app-installation-id", flag: "github-app-installation-id", kind: kindInt, def: 0, trusted: true,
		text:  "0 (none)",
		usage: "ID of the GitHub App's installation on the repository's owner, the number at the end of the installation's settings URL (0 = none)"},
	{key: "github.app-private-key-file", flag: "github-app-private-key-file", kind: kindString, def: "", trusted: true,
		text:  `"" (none)`,
		usage: "file holding the GitHub App's private key (the .pem its settings page generates), which the worker reads when it starts; it must be readable by its owner alone (chmod 600 FILE); a leading ~ is expanded"},
	{key: "github.write-interval", flag: "github-write-interval", kind: kindDuration, def: time.Second,
		usage: "minimum time between two GitHub write requests of one worker (0 = no spacing)"},
	{key: "github.webhook-listen", flag: "github-webhook-listen", kind: kindString, def: "", trusted: true,
		text:  `"" (off)`,
		usage: "host:port where the worker serves GitHub webhooks at POST /github/webhook, such as 127.0.0.1:8090 behind a reverse proxy or a tunnel; each delivery wakes the queue, follower or session it concerns (polling stays on)"},
	{key: "github.webhook-secret-env", flag: "github-webhook-secret-env", kind: kindString, def: defaultWebhookSecretEnv, trusted: true,
		usage: "name of the environment variable holding the webhook's secret, which every delivery's X-Hub-Signature-256 is checked with; the worker refuses to serve webhooks when it is empty"},

	{key: "queue.label", flag: "label", kind: kindString, def: "ralph-ready",
		usage: "label of the issues the queue works on"},
	{key: "queue.poll-interval", flag: "poll-interval", kind: kindDuration, def: 5 * time.Minute,
		usage: "time between two looks for labelled issues, at least 1s"},
	{key: "queue.max-issues", flag: "max-issues", kind: kindInt, def: 0,
		usage: "stop the queue after this many issues (0 = no limit)"},
	{key: "queue.parallel", flag: "parallel", kind: kindInt, def: 1,
		usage: "issues worked on at once, each in its own work tree and session (1 to 16)"},
	{key: "queue.max-cost-usd", flag: "queue-max-cost", kind: kindFloat, def: 0.0,
		usage: "stop the queue once its sessions have spent this many US dollars together (0 = no limit)"},
	{key: "queue.max-cost-per-day", flag: "queue-max-cost-per-day", kind: kindFloat, def: 0.0,
		usage: "take no new issue for the rest of the UTC day once the day's issues and their pull requests' rounds have cost this many US dollars (0 = no limit)"},
	{key: "queue.base-branch", flag: "base-branch", kind: kindString, def: "",
		text:  `"" (the repository's default branch)`,
		usage: "branch the pull requests are based on and merge into (default: the repository's default branch)"},
	{key: "queue.draft", flag: "draft", kind: kindBool, def: false,
		usage: "open the pull requests as drafts"},
	{key: "queue.follow", flag: "follow-pulls", kind: kindBool, def: true,
		usage: "follow each pull request after it is opened until it is merged or closed: fix failing checks, answer reviews, bring a moved base in, merge with queue.auto-merge (false = the issue ends at \"pull request opened\")"},
	{key: "queue.max-fix-rounds", flag: "max-fix-rounds", kind: kindInt, def: 3,
		usage: "rounds that fix failing checks of one pull request (and, apart, rounds that bring a moved base in) before it gets ralph-failed and a comment naming the checks"},
	{key: "queue.checks-timeout", flag: "checks-timeout", kind: kindDuration, def: 2 * time.Hour,
		usage: "how long the checks of a pull request's head may take before the pull request gets ralph-failed"},
	{key: "queue.max-review-rounds", flag: "max-review-rounds", kind: kindInt, def: 5,
		usage: "rounds that answer reviews of one pull request; later comments are left to people"},
	{key: "queue.trusted-bots", flag: "trusted-bot", kind: kindArgs, def: []string{},
		text:  "[] (none)",
		usage: "bot logins whose review comments reach the agent like those of people with write access (repeatable; others' never do)"},
	{key: "queue.adopt-prs", flag: "adopt-prs", kind: kindBool, def: false,
		usage: "let a comment \"@<bot> <instruction>\" by someone with write access on a pull request Ralph did not open run one round on its branch (not a fork's, not the base)"},
	{key: "queue.auto-merge", flag: "auto-merge", kind: kindBool, def: false,
		usage: "merge a pull request once every check is green and GitHub says it can be merged (approved where the repository asks for reviews)"},
	{key: "queue.merge-method", flag: "merge-method", kind: kindString, def: contract.MergeSquash,
		usage: "how queue.auto-merge merges: squash, merge or rebase"},
	{key: "queue.update-strategy", flag: "update-strategy", kind: kindString, def: contract.UpdateByMerge,
		usage: "how a pull request that conflicts with its moved base brings it in: merge (never rewrites the branch) or rebase (falls back to merge on conflicts; pushed by force with lease)"},

	{key: "dev.enabled", flag: "dev", kind: kindBool, def: false, trusted: true,
		usage: "use the Temporal dev server of the state directory, starting it in the background when none runs"},
	{key: "dev.state-dir", flag: "state-dir", kind: kindString, def: "", trusted: true,
		text:  "$XDG_STATE_HOME/durable-ralph or ~/.local/state/durable-ralph",
		usage: "directory of the dev server's database (default: $XDG_STATE_HOME/durable-ralph or ~/.local/state/durable-ralph)"},
	{key: "dev.ip", flag: "dev-ip", kind: kindString, def: "127.0.0.1", trusted: true,
		usage: "IP address the dev server listens on"},
	{key: "dev.port", flag: "dev-port", kind: kindInt, def: 7233, trusted: true,
		usage: "dev server frontend (gRPC) port"},
	{key: "dev.ui-port", flag: "dev-ui-port", kind: kindInt, def: 8233, trusted: true,
		usage: "dev server Web UI port (0 = no UI)"},
	{key: "dev.namespace", flag: "namespace", kind: kindString, def: "default", trusted: true,
		usage: "Temporal namespace (the dev server creates it)"},

	{key: "worker.host-id", flag: "host-id", kind: kindString, def: "", trusted: true,
		text:  `"" (the hostname)`,
		usage: "stable ID of this machine: its worker serves the task queue <task-queue>@<host-id>, where the sessions of its workspaces run their activities, and it is part of their workflow IDs (default: the hostname)"},
	{key: "worker.host-timeout", flag: "host-timeout", kind: kindDuration, def: 2 * time.Minute,
		usage: "how long a session's work may wait for a worker on the workspace's host before the session shows host_offline (it waits on, without failing), at least 1s"},
	{key: "worker.max-agents", flag: "max-agents", kind: kindInt, def: 4, trusted: true,
		usage: "most agent processes this worker runs at once; more iterations wait, shown as waiting_for_agent_slot"},
	{key: "worker.metrics-addr", flag: "metrics-addr", kind: kindString, def: "", trusted: true,
		text:  `"" (off)`,
		usage: "host:port where the worker serves Prometheus metrics at /metrics, such as 127.0.0.1:9464"},

	{key: "codec.key-file", flag: "codec-key-file", kind: kindString, def: "", trusted: true,
		text:  `"" (no encryption)`,
		usage: "file holding a base64-encoded 32-byte AES-256 key (such as the output of openssl rand -base64 32) that encrypts everything sessions store in Temporal; a leading ~ is expanded"},
	{key: "codec.key-env", flag: "codec-key-env", kind: kindString, def: "", trusted: true,
		text:  `"" (no encryption)`,
		usage: "name of the environment variable holding the key, instead of codec.key-file"},
	{key: "codec.server", flag: "codec-server", kind: kindString, def: "", trusted: true,
		text:  `"" (off)`,
		usage: "host:port where the worker serves a Temporal codec server (/encode and /decode), so that the Temporal UI can show decrypted payloads"},
	{key: "notify.events", flag: "notify-event", kind: kindArgs, def: notifyEvents, trusted: true,
		usage: "event that reaches the notify channels: question (a checkpoint waits for an answer), plan (a plan waits for approval), ended, failed, limit (a session stopped at a limit), pr (a pull request was opened, merged or closed), host_offline (a session waits for its host's worker) or budget (a queue spent its daily budget) (repeatable; the environment variable is space separated)"},
	{key: "notify.max-age", flag: "notify-max-age", kind: kindDuration, def: 24 * time.Hour, trusted: true,
		usage: "how long a notification that a channel fails to take is retried before that channel is given up on it"},
	{key: "notify.ui-url", flag: "notify-ui-url", kind: kindString, def: "", trusted: true,
		text:  `"" (the dev server's UI: http://<dev.ip>:<dev.ui-port>)`,
		usage: "base URL of the Temporal UI that messages link each session to, such as https://temporal.example.com (default: the dev server's UI, http://<dev.ip>:<dev.ui-port>)"},
	{key: "notify.telegram.token-env", flag: "telegram-token-env", kind: kindString, def: "RALPH_TELEGRAM_TOKEN", trusted: true,
		usage: "name of the environment variable holding the Telegram bot's token (from @BotFather); Telegram is on when it is set and notify.telegram.chat-ids is not empty"},
	{key: "notify.telegram.chat-ids", flag: "telegram-chat-id", kind: kindInt64s, def: []int64{}, trusted: true,
		usage: "ID of a Telegram chat that receives the messages and may answer, such as 123456789, or -1001234567890 for a group (repeatable; the environment variable is space separated)"},
	{key: "notify.telegram.api-url", flag: "telegram-api-url", kind: kindString, def: defaultTelegramAPIURL, trusted: true,
		usage: "base URL of the Telegram Bot API, such as a self-hosted Bot API server; the bot token is sent there"},
	{key: "notify.slack.webhook-url-env", flag: "slack-webhook-url-env", kind: kindString, def: "RALPH_SLACK_WEBHOOK", trusted: true,
		usage: "name of the environment variable holding the URL of a Slack incoming webhook, which posts the messages in its channel; Slack is on when it is set, or when the bot token and notify.slack.channel are"},
	{key: "notify.slack.bot-token-env", flag: "slack-bot-token-env", kind: kindString, def: "RALPH_SLACK_BOT_TOKEN", trusted: true,
		usage: "name of the environment variable holding a Slack bot token (xoxb-…), which posts in notify.slack.channel instead of the incoming webhook, so that answers in a message's thread count"},
	{key: "notify.slack.channel", flag: "slack-channel", kind: kindString, def: "", trusted: true,
		text:  `"" (none)`,
		usage: "Slack channel the bot posts in, such as #ralph or its ID"},
	{key: "notify.slack.api-url", flag: "slack-api-url", kind: kindString, def: defaultSlackAPIURL, trusted: true,
		usage: "base URL of Slack's Web API; the bot token is sent there"},
	{key: "notify.slack.commands-listen", flag: "slack-commands-listen", kind: kindString, def: "", trusted: true,
		text:  `"" (off)`,
		usage: "host:port where the worker takes the Slack app's slash command /run at POST /slack/commands, such as 127.0.0.1:8091 behind a tunnel; the requests are checked with the signing secret"},
	{key: "notify.slack.signing-secret-env", flag: "slack-signing-secret-env", kind: kindString, def: "RALPH_SLACK_SIGNING_SECRET", trusted: true,
		usage: "name of the environment variable holding the Slack app's signing secret, which signs its slash commands"},
	{key: "notify.workspaces", flag: "chat-workspace", kind: kindArgs, def: []string{}, trusted: true,
		text:  `"" (none)`,
		usage: "workspace that /run ALIAS IDEA in an allowed Telegram chat or Slack channel may plan and run, as ALIAS=DIR, such as api=/srv/acme/api (repeatable; the environment variable is space separated)"},
	{key: "notify.webhook.url", flag: "notify-webhook-url", kind: kindString, def: "", trusted: true,
		text:  `"" (off)`,
		usage: "URL that receives each notification as a JSON POST, such as https://example.com/hooks/ralph"},
	{key: "notify.webhook.secret-env", flag: "notify-webhook-secret-env", kind: kindString, def: "RALPH_NOTIFY_SECRET", trusted: true,
		usage: "name of the environment variable holding the secret that signs each webhook POST (X-Ralph-Signature-256: sha256=HMAC of the body); without it the POSTs are not signed"},
})

// roleSpecs returns the settings of the agent of role, a role besides the
// executor: roles.<role>.backend, .model, .command and .instructions. Only
// what backend and instructions say differs from role to role.
func roleSpecs(role, backendUsage, instructionsUsage string) []spec {
	key := "roles." + role + "."
	return []spec{
		{key: key + "backend", flag: role + "-backend", kind: kindString, def: "",
			text:  `"" (agent.backend)`,
			usage: backendUsage},
		{key: key + "model", flag: role + "-model", kind: kindString, def: "",
			text:  `"" (agent.model on the same backend, else the backend's default)`,
			usage: "model of the " + role + " (default: agent.model when the " + role + "'s backend is agent.backend, else the backend's default)"},
		{key: key + "command", flag: role + "-command", kind: kindCommand, def: "",
			text:  `"" (agent.command on the same backend, else the backend's CLI)`,
			usage: "command line of the " + role + " (default: agent.command when the " + role + "'s backend is agent.backend, else the backend's CLI)"},
		{key: key + "instructions", flag: role + "-instructions", kind: kindString, def: "",
			text:  `"" (none)`,
			usage: instructionsUsage},
	}
}

// specByKey indexes specs by key.
var specByKey = func() map[string]*spec {
	m := make(map[string]*spec, len(specs))
	for i := range specs {
		m[specs[i].key] = &specs[i]
	}
	return m
}()

// lookupSpec returns the spec of key. It panics for an unknown key, which is
// a bug in this package.
func lookupSpec(key string) *spec {
	s, ok := specByKey[key]
	if !ok {
		panic("config: no spec for key " + key)
	}
	return s
}
