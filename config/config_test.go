package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// isolate clears every RALPH_* variable for the test, points
// XDG_CONFIG_HOME at a new empty directory, so that the real user config
// file stays out, and XDG_STATE_HOME at another, which it returns.
func isolate(t *testing.T) string {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, envPrefix+"_") {
			t.Setenv(k, "") // viper treats empty as unset
		}
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	return state
}

// writeUserFile writes content to the user config file under
// $XDG_CONFIG_HOME, which isolate set, and returns its path.
func writeUserFile(t *testing.T, content string) string {
	t.Helper()
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "durable-ralph")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return writeFile(t, dir, "config.yaml", content)
}

// setenv sets the environment variables in env for the test.
func setenv(t *testing.T, env map[string]string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// setup isolates the test and returns a new workspace, with user as the
// user config file and file as its ralph.yaml, each if not empty, and the
// environment variables of env set.
func setup(t *testing.T, user, file string, env map[string]string) string {
	t.Helper()
	isolate(t)
	ws := t.TempDir()
	if user != "" {
		writeUserFile(t, user)
	}
	if file != "" {
		writeFile(t, ws, "ralph.yaml", file)
	}
	setenv(t, env)
	return ws
}

// loadRalphYAML isolates the test and loads, with args, a new workspace
// whose ralph.yaml is content; it returns the path of that ralph.yaml too.
func loadRalphYAML(t *testing.T, content string, args ...string) (Config, string, error) {
	t.Helper()
	ws := setup(t, "", content, nil)
	cfg, err := load(t, ws, args...)
	return cfg, filepath.Join(ws, "ralph.yaml"), err
}

// replaceEach returns ss with the replacements of r made in each; nil if
// ss is empty.
func replaceEach(r *strings.Replacer, ss []string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, r.Replace(s))
	}
	return out
}

// load parses args with the flags of AddFlags and loads the configuration.
func load(t *testing.T, workspace string, args ...string) (Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs)
	require.NoError(t, fs.Parse(args))
	return Load(fs, workspace)
}

// yamlFor returns a YAML document setting the dotted key to value.
func yamlFor(key, value string) string {
	var b strings.Builder
	parts := strings.Split(key, ".")
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i == len(parts)-1 {
			b.WriteString(" " + value)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// defaults returns the configuration of workspace ws with nothing set, for
// state home state.
func defaults(state, ws string) Config {
	return Config{
		Workspace: ws,
		TaskQueue: "ralph",
		Agent: AgentConfig{
			Backend:       "claude",
			Command:       []string{"claude"},
			Prices:        []string{},
			Args:          []string{},
			Fallback:      []string{},
			FallbackAfter: 15 * time.Minute,
			Env:           []string{},
			Network:       "internet",
			NetworkAllow:  []string{},
			SandboxRO:     []string{},
			SandboxRW:     []string{},
			Limits:        AgentLimits{Processes: 2048, Memory: "4GiB", Tmp: "1GiB"},
		},
		Roles: RolesConfig{
			Reviewer: ReviewerConfig{Command: []string{}},
			Planner:  RoleConfig{Command: []string{}},
		},
		Limits: Limits{
			MaxIterations:          100,
			MaxRuntime:             4 * time.Hour,
			MaxCostUSD:             50,
			MaxConsecutiveFailures: 3,
			MaxNoProgress:          3,
			MaxTaskFileRepairs:     2,
			IterationTimeout:       30 * time.Minute,
			HeartbeatTimeout:       10 * time.Second,
			IterationsPerRun:       25,
		},
		Git:        GitConfig{AutoCommit: true, ProtectedPaths: []string{".github/workflows/**"}},
		Checkpoint: CheckpointConfig{OnTimeout: "continue"},
		GitHub: GitHubConfig{
			APIURL:        "https://api.github.com/",
			TokenEnv:      "GITHUB_TOKEN",
			WriteInterval: time.Second,

			WebhookSecretEnv: "RALPH_GITHUB_WEBHOOK_SECRET",
		},
		Queue: QueueConfig{
			Label:           "ralph-ready",
			PollInterval:    5 * time.Minute,
			Parallel:        1,
			Follow:          true,
			MaxFixRounds:    3,
			ChecksTimeout:   2 * time.Hour,
			MaxReviewRounds: 5,
			TrustedBots:     []string{},
			MergeMethod:     "squash",
			UpdateStrategy:  "merge",
		},
		Dev: DevConfig{
			StateDir:  filepath.Join(state, "durable-ralph"),
			IP:        "127.0.0.1",
			Port:      7233,
			UIPort:    8233,
			Namespace: "default",
		},
		Worker: WorkerConfig{
			HostID:      hostname(),
			HostTimeout: 2 * time.Minute,
			MaxAgents:   4,
		},
		Notify: NotifyConfig{
			Events:     []string{"question", "plan", "ended", "failed", "limit", "pr", "host_offline", "budget"},
			MaxAge:     24 * time.Hour,
			Telegram:   TelegramConfig{TokenEnv: "RALPH_TELEGRAM_TOKEN", ChatIDs: []int64{}, APIURL: "https://api.telegram.org"},
			Slack:      SlackConfig{WebhookURLEnv: "RALPH_SLACK_WEBHOOK", BotTokenEnv: "RALPH_SLACK_BOT_TOKEN", APIURL: "https://slack.com/api/", SigningSecretEnv: "RALPH_SLACK_SIGNING_SECRET"},
			Webhook:    NotifyWebhookConfig{SecretEnv: "RALPH_NOTIFY_SECRET"},
			Workspaces: []string{},
		},
	}
}

func hostname() string {
	name, err := os.Hostname()
	if err != nil {
		panic(err)
	}
	return name
}

func TestLoadDefaults(t *testing.T) {
	state := isolate(t)
	ws := t.TempDir()

	cfg, err := load(t, ws)
	require.NoError(t, err)
	want := defaults(state, ws)
	require.Equal(t, want, cfg)

	// Without flags at all, the defaults are the same.
	cfg, err = Load(nil, ws)
	require.NoError(t, err)
	require.Equal(t, want, cfg)
}

func TestLoadPrecedence(t *testing.T) {
	tests := []struct {
		key                   string
		user, file, env, flag string // raw values from each source
		def, fromUser         any    // expected results
		fromFile, fromEnv     any
		fromFlag              any
		get                   func(Config) any
	}{
		{
			key: "task-queue", user: "from-user", file: "from-file", env: "from-env", flag: "from-flag",
			def: "ralph", fromUser: "from-user", fromFile: "from-file", fromEnv: "from-env", fromFlag: "from-flag",
			get: func(c Config) any { return c.TaskQueue },
		},
		{
			key: "agent.model", user: "fast", file: "sonnet", env: "opus", flag: "haiku",
			def: "", fromUser: "fast", fromFile: "sonnet", fromEnv: "opus", fromFlag: "haiku",
			get: func(c Config) any { return c.Agent.Model },
		},
		{
			key: "agent.env", user: "[A, B=1]", file: "C", env: "D E='x y'", flag: "F=2",
			def: []string{}, fromUser: []string{"A", "B=1"}, fromFile: []string{"C"},
			fromEnv: []string{"D", "E=x y"}, fromFlag: []string{"F=2"},
			get: func(c Config) any { return c.Agent.Env },
		},
		{
			key: "limits.max-iterations", user: "5", file: "10", env: "20", flag: "30",
			def: 100, fromUser: 5, fromFile: 10, fromEnv: 20, fromFlag: 30,
			get: func(c Config) any { return c.Limits.MaxIterations },
		},
		{
			key: "limits.max-runtime", user: "3h", file: "1h", env: "90m", flag: "2h30m",
			def: 4 * time.Hour, fromUser: 3 * time.Hour, fromFile: time.Hour, fromEnv: 90 * time.Minute, fromFlag: 150 * time.Minute,
			get: func(c Config) any { return c.Limits.MaxRuntime },
		},
		{
			key: "limits.max-cost-usd", user: "99", file: "12.5", env: "7", flag: "0",
			def: 50.0, fromUser: 99.0, fromFile: 12.5, fromEnv: 7.0, fromFlag: 0.0,
			get: func(c Config) any { return c.Limits.MaxCostUSD },
		},
		{
			key: "limits.max-task-file-repairs", user: "1", file: "4", env: "5", flag: "6",
			def: 2, fromUser: 1, fromFile: 4, fromEnv: 5, fromFlag: 6,
			get: func(c Config) any { return c.Limits.MaxTaskFileRepairs },
		},
		{
			key: "git.auto-commit", user: "false", file: "true", env: "false", flag: "true",
			def: true, fromUser: false, fromFile: true, fromEnv: false, fromFlag: true,
			get: func(c Config) any { return c.Git.AutoCommit },
		},
		{
			key: "checkpoint.every", user: "2", file: "5", env: "10", flag: "0",
			def: 0, fromUser: 2, fromFile: 5, fromEnv: 10, fromFlag: 0,
			get: func(c Config) any { return c.Checkpoint.Every },
		},
		{
			key: "checkpoint.before-complete", user: "true", file: "false", env: "true", flag: "false",
			def: false, fromUser: true, fromFile: false, fromEnv: true, fromFlag: false,
			get: func(c Config) any { return c.Checkpoint.BeforeComplete },
		},
		{
			key: "checkpoint.timeout", user: "2h", file: "1h", env: "15m", flag: "0",
			def: time.Duration(0), fromUser: 2 * time.Hour, fromFile: time.Hour, fromEnv: 15 * time.Minute, fromFlag: time.Duration(0),
			get: func(c Config) any { return c.Checkpoint.Timeout },
		},
		{
			key: "checkpoint.on-timeout", user: "stop", file: "continue", env: "stop", flag: "continue",
			def: "continue", fromUser: "stop", fromFile: "continue", fromEnv: "stop", fromFlag: "continue",
			get: func(c Config) any { return c.Checkpoint.OnTimeout },
		},
		{
			key: "task.check-command", user: "make check", file: "go test ./...", env: "true", flag: "exit 0",
			def: "", fromUser: "make check", fromFile: "go test ./...", fromEnv: "true", fromFlag: "exit 0",
			get: func(c Config) any { return c.Task.CheckCommand },
		},
		{
			key: "github.repo", user: "user/repo", file: "file-owner/file.repo", env: "env_owner/env-repo", flag: "Flag/Repo",
			def: "", fromUser: "user/repo", fromFile: "file-owner/file.repo", fromEnv: "env_owner/env-repo", fromFlag: "Flag/Repo",
			get: func(c Config) any { return c.GitHub.Repo },
		},
		{
			key: "github.api-url", user: "https://ghe.example/api/v3", file: "http://127.0.0.1:8080/", env: "https://env.example/api/", flag: "HTTPS://flag.example",
			def: "https://api.github.com/", fromUser: "https://ghe.example/api/v3/", fromFile: "http://127.0.0.1:8080/",
			fromEnv: "https://env.example/api/", fromFlag: "HTTPS://flag.example/",
			get: func(c Config) any { return c.GitHub.APIURL },
		},
		{
			key: "github.token-env", user: "USER_TOKEN", file: "FILE_TOKEN", env: "ENV_TOKEN", flag: "_flag_token2",
			def: "GITHUB_TOKEN", fromUser: "USER_TOKEN", fromFile: "FILE_TOKEN", fromEnv: "ENV_TOKEN", fromFlag: "_flag_token2",
			get: func(c Config) any { return c.GitHub.TokenEnv },
		},
		{
			key: "github.write-interval", user: "2s", file: "0", env: "500ms", flag: "3s",
			def: time.Second, fromUser: 2 * time.Second, fromFile: time.Duration(0), fromEnv: 500 * time.Millisecond, fromFlag: 3 * time.Second,
			get: func(c Config) any { return c.GitHub.WriteInterval },
		},
		{
			key: "queue.label", user: "user-label", file: "'ralph: ready'", env: "from env", flag: "flag",
			def: "ralph-ready", fromUser: "user-label", fromFile: "ralph: ready", fromEnv: "from env", fromFlag: "flag",
			get: func(c Config) any { return c.Queue.Label },
		},
		{
			key: "queue.poll-interval", user: "10m", file: "1s", env: "1h", flag: "30s",
			def: 5 * time.Minute, fromUser: 10 * time.Minute, fromFile: time.Second, fromEnv: time.Hour, fromFlag: 30 * time.Second,
			get: func(c Config) any { return c.Queue.PollInterval },
		},
		{
			key: "queue.max-issues", user: "1", file: "2", env: "3", flag: "0",
			def: 0, fromUser: 1, fromFile: 2, fromEnv: 3, fromFlag: 0,
			get: func(c Config) any { return c.Queue.MaxIssues },
		},
		{
			key: "queue.max-cost-usd", user: "1.5", file: "2", env: "3.25", flag: "0",
			def: 0.0, fromUser: 1.5, fromFile: 2.0, fromEnv: 3.25, fromFlag: 0.0,
			get: func(c Config) any { return c.Queue.MaxCostUSD },
		},
		{
			key: "queue.base-branch", user: "main", file: "develop", env: "release/1.x", flag: "trunk",
			def: "", fromUser: "main", fromFile: "develop", fromEnv: "release/1.x", fromFlag: "trunk",
			get: func(c Config) any { return c.Queue.BaseBranch },
		},
		{
			key: "queue.draft", user: "true", file: "false", env: "true", flag: "false",
			def: false, fromUser: true, fromFile: false, fromEnv: true, fromFlag: false,
			get: func(c Config) any { return c.Queue.Draft },
		},
		{
			key: "dev.enabled", user: "true", file: "false", env: "true", flag: "false",
			def: false, fromUser: true, fromFile: false, fromEnv: true, fromFlag: false,
			get: func(c Config) any { return c.Dev.Enabled },
		},
		{
			key: "dev.ip", user: "0.0.0.0", file: "::1", env: "127.0.0.2", flag: "192.0.2.1",
			def: "127.0.0.1", fromUser: "0.0.0.0", fromFile: "::1", fromEnv: "127.0.0.2", fromFlag: "192.0.2.1",
			get: func(c Config) any { return c.Dev.IP },
		},
		{
			key: "dev.ui-port", user: "8000", file: "0", env: "9000", flag: "9100",
			def: 8233, fromUser: 8000, fromFile: 0, fromEnv: 9000, fromFlag: 9100,
			get: func(c Config) any { return c.Dev.UIPort },
		},
		{
			key: "codec.server", user: "127.0.0.1:1", file: "localhost:2", env: ":3", flag: "[::1]:4",
			def: "", fromUser: "127.0.0.1:1", fromFile: "localhost:2", fromEnv: ":3", fromFlag: "[::1]:4",
			get: func(c Config) any { return c.Codec.Server },
		},
	}
	sources := []struct {
		name                  string
		user, file, env, flag bool
		want                  func(def, fromUser, fromFile, fromEnv, fromFlag any) any
	}{
		{"default", false, false, false, false, func(d, _, _, _, _ any) any { return d }},
		{"user over default", true, false, false, false, func(_, u, _, _, _ any) any { return u }},
		{"file over user", true, true, false, false, func(_, _, f, _, _ any) any { return f }},
		{"env over default", false, false, true, false, func(_, _, _, e, _ any) any { return e }},
		{"env over user", true, false, true, false, func(_, _, _, e, _ any) any { return e }},
		{"env over file", false, true, true, false, func(_, _, _, e, _ any) any { return e }},
		{"flag over file", false, true, false, true, func(_, _, _, _, f any) any { return f }},
		{"flag over all", true, true, true, true, func(_, _, _, _, f any) any { return f }},
	}
	for _, tt := range tests {
		for _, src := range sources {
			t.Run(tt.key+"/"+src.name, func(t *testing.T) {
				isolate(t)
				ws := t.TempDir()
				s := lookupSpec(tt.key)
				var args []string
				if src.user {
					writeUserFile(t, yamlFor(tt.key, tt.user))
				}
				if src.file {
					// The workspace's ralph.yaml may not set a trusted
					// key, but a file named by --config may.
					if s.trusted {
						args = append(args, "--config="+writeFile(t, t.TempDir(), "ralph.yaml", yamlFor(tt.key, tt.file)))
					} else {
						writeFile(t, ws, "ralph.yaml", yamlFor(tt.key, tt.file))
					}
				}
				if src.env {
					t.Setenv(s.env(), tt.env)
				}
				if src.flag {
					args = append(args, "--"+s.flag+"="+tt.flag)
				}

				cfg, err := load(t, ws, args...)
				require.NoError(t, err)
				require.Equal(t, src.want(tt.def, tt.fromUser, tt.fromFile, tt.fromEnv, tt.fromFlag), tt.get(cfg))
			})
		}
	}
}

func TestLoadEnvOnly(t *testing.T) {
	// Keys set only in the environment, with no flag bound, are honoured:
	// viper's Unmarshal skips them unless they have a default
	// (spf13/viper#761).
	state := isolate(t)
	ws := t.TempDir()
	setenv(t, map[string]string{
		"RALPH_AGENT_MODEL":                  "opus",
		"RALPH_TASK_COMPLETION_PROMISE":      "<promise>DONE</promise>",
		"RALPH_LIMITS_MAX_NO_PROGRESS":       "7",
		"RALPH_LIMITS_HEARTBEAT_TIMEOUT":     "1m",
		"RALPH_GIT_ALLOW_DIRTY":              "1",
		"RALPH_CHECKPOINT_TIMEOUT":           "30m",
		"RALPH_DEV_NAMESPACE":                "ralph",
		"RALPH_AGENT_ARGS":                   "--verbose --append-system-prompt 'be brief'",
		"RALPH_AGENT_ENV":                    "GH_TOKEN LANG=C",
		"RALPH_LIMITS_MAX_TASK_FILE_REPAIRS": "4",
		"RALPH_CODEC_KEY_ENV":                "RALPH_KEY",
		"RALPH_CODEC_SERVER":                 "127.0.0.1:8081",
		"RALPH_TASK_CHECK_COMMAND":           "go test ./...",
		"RALPH_GITHUB_REPO":                  "durable-ralph/ralph",
		"RALPH_GITHUB_API_URL":               "https://ghe.example/api/v3",
		"RALPH_GITHUB_TOKEN_ENV":             "RALPH_GH_TOKEN",
		"RALPH_GITHUB_WRITE_INTERVAL":        "0",
		"RALPH_QUEUE_LABEL":                  "ready",
		"RALPH_QUEUE_POLL_INTERVAL":          "1m",
		"RALPH_QUEUE_MAX_ISSUES":             "5",
		"RALPH_QUEUE_MAX_COST_USD":           "12.5",
		"RALPH_QUEUE_BASE_BRANCH":            "develop",
		"RALPH_QUEUE_DRAFT":                  "true",
		"RALPH_QUEUE_FOLLOW":                 "false",
		"RALPH_QUEUE_MAX_FIX_ROUNDS":         "1",
		"RALPH_QUEUE_CHECKS_TIMEOUT":         "30m",
		"RALPH_QUEUE_MAX_REVIEW_ROUNDS":      "2",
		"RALPH_QUEUE_TRUSTED_BOTS":           "coderabbitai[bot] renovate[bot]",
		"RALPH_QUEUE_AUTO_MERGE":             "true",
		"RALPH_QUEUE_MERGE_METHOD":           "rebase",
		"RALPH_QUEUE_UPDATE_STRATEGY":        "rebase",
	})

	for _, fs := range []*pflag.FlagSet{nil, pflag.NewFlagSet("empty", pflag.ContinueOnError)} {
		cfg, err := Load(fs, ws)
		require.NoError(t, err)
		want := defaults(state, ws)
		want.Agent.Model = "opus"
		want.Agent.Args = []string{"--verbose", "--append-system-prompt", "be brief"}
		want.Agent.Env = []string{"GH_TOKEN", "LANG=C"}
		want.Limits.MaxTaskFileRepairs = 4
		want.Codec = CodecConfig{KeyEnv: "RALPH_KEY", Server: "127.0.0.1:8081"}
		want.Task.CompletionPromise = "<promise>DONE</promise>"
		want.Limits.MaxNoProgress = 7
		want.Limits.HeartbeatTimeout = time.Minute
		want.Git.AllowDirty = true
		want.Checkpoint.Timeout = 30 * time.Minute
		want.Dev.Namespace = "ralph"
		want.Task.CheckCommand = "go test ./..."
		want.GitHub = GitHubConfig{
			Repo:     "durable-ralph/ralph",
			APIURL:   "https://ghe.example/api/v3/",
			TokenEnv: "RALPH_GH_TOKEN",

			WebhookSecretEnv: "RALPH_GITHUB_WEBHOOK_SECRET",
		}
		want.Queue = QueueConfig{
			Label:           "ready",
			PollInterval:    time.Minute,
			MaxIssues:       5,
			Parallel:        1,
			MaxCostUSD:      12.5,
			BaseBranch:      "develop",
			Draft:           true,
			Follow:          false,
			MaxFixRounds:    1,
			ChecksTimeout:   30 * time.Minute,
			MaxReviewRounds: 2,
			TrustedBots:     []string{"coderabbitai[bot]", "renovate[bot]"},
			AutoMerge:       true,
			MergeMethod:     "rebase",
			UpdateStrategy:  "rebase",
		}
		require.Equal(t, want, cfg)
	}
}

func TestLoadInvalid(t *testing.T) {
	const (
		badRepo    = "must be owner/name, each of letters, digits, -, _ and ., such as durable-ralph/ralph, or empty to take it from the origin remote"
		badAPIURL  = "must be an absolute http or https URL, such as https://api.github.com/"
		badEnvName = "must be the name of an environment variable: letters, digits and _, not starting with a digit"
	)
	tests := []struct {
		name string
		user string            // user config file, if not empty
		file string            // ralph.yaml in the workspace, if not empty
		env  map[string]string // environment
		args []string          // command line
		want []string          // errors, one per line, in order
	}{
		{
			name: "flag validation",
			args: []string{"--max-iterations=-1"},
			want: []string{"invalid limits.max-iterations (--max-iterations, RALPH_LIMITS_MAX_ITERATIONS) = -1: must be at least 1"},
		},
		{
			name: "env decoding",
			env:  map[string]string{"RALPH_LIMITS_MAX_RUNTIME": "soon"},
			want: []string{`invalid limits.max-runtime (--max-runtime, RALPH_LIMITS_MAX_RUNTIME) = "soon": must be a duration such as 90s, 30m or 4h`},
		},
		{
			name: "file decoding",
			file: "limits:\n  max-iterations: lots\n",
			want: []string{`invalid limits.max-iterations (--max-iterations, RALPH_LIMITS_MAX_ITERATIONS) = "lots": must be a whole number`},
		},
		{
			name: "file fraction",
			file: "limits:\n  max-iterations: 2.5\n",
			want: []string{`invalid limits.max-iterations (--max-iterations, RALPH_LIMITS_MAX_ITERATIONS) = 2.5: must be a whole number`},
		},
		{
			name: "file duration without unit",
			file: "limits:\n  iteration-timeout: 1800\n",
			want: []string{`invalid limits.iteration-timeout (--iteration-timeout, RALPH_LIMITS_ITERATION_TIMEOUT) = 1800: needs a unit, such as 1800s or 1800m`},
		},
		{
			name: "env duration without unit",
			env:  map[string]string{"RALPH_LIMITS_MAX_RUNTIME": "3600"},
			want: []string{`invalid limits.max-runtime (--max-runtime, RALPH_LIMITS_MAX_RUNTIME) = "3600": needs a unit, such as 3600s or 3600m`},
		},
		{
			name: "env bool",
			env:  map[string]string{"RALPH_GIT_AUTO_COMMIT": "yes"},
			want: []string{`invalid git.auto-commit (--auto-commit, RALPH_GIT_AUTO_COMMIT) = "yes": must be true or false`},
		},
		{
			name: "env float",
			env:  map[string]string{"RALPH_LIMITS_MAX_COST_USD": "$5"},
			want: []string{`invalid limits.max-cost-usd (--max-cost, RALPH_LIMITS_MAX_COST_USD) = "$5": must be a number`},
		},
		{
			name: "env not finite",
			env:  map[string]string{"RALPH_LIMITS_MAX_COST_USD": "Inf"},
			want: []string{`invalid limits.max-cost-usd (--max-cost, RALPH_LIMITS_MAX_COST_USD) = +Inf: must be a finite number`},
		},
		{
			name: "file negative cost",
			file: "limits:\n  max-cost-usd: -1\n",
			want: []string{`invalid limits.max-cost-usd (--max-cost, RALPH_LIMITS_MAX_COST_USD) = -1: must not be negative (0 = no limit)`},
		},
		{
			name: "flag negative runtime",
			args: []string{"--max-runtime=-1h"},
			want: []string{`invalid limits.max-runtime (--max-runtime, RALPH_LIMITS_MAX_RUNTIME) = -1h: must not be negative (0 = no limit)`},
		},
		{
			name: "flag mode",
			args: []string{"--mode=plan"},
			want: []string{`invalid task.mode (--mode, RALPH_TASK_MODE) = "plan": must be one of prd, progress, prompt, or empty to detect it`},
		},
		{
			name: "command backend without a command",
			env:  map[string]string{"RALPH_AGENT_COMMAND": "  ", "RALPH_AGENT_BACKEND": "command"},
			want: []string{`invalid agent.command (--agent-command, RALPH_AGENT_COMMAND) = "": must be set when agent.backend is command: the command line of the agent to loop, such as [my-agent, --flag]`},
		},
		{
			name: "unknown backend",
			args: []string{"--backend=aider"},
			want: []string{`invalid agent.backend (--backend, RALPH_AGENT_BACKEND) = "aider": must be one of claude, codex, gemini, command`},
		},
		{
			name: "bad price",
			args: []string{"--agent-price=gpt-5=1.25/x/10"},
			want: []string{`invalid agent.prices (--agent-price, RALPH_AGENT_PRICES) = "gpt-5=1.25/x/10": entry "gpt-5=1.25/x/10": "x" is not a price (a number of US dollars, at least 0)`},
		},
		{
			name: "price without model",
			args: []string{"--agent-price=1.25/10"},
			want: []string{`invalid agent.prices (--agent-price, RALPH_AGENT_PRICES) = "1.25/10": entry "1.25/10" must be MODEL=INPUT/CACHED/OUTPUT or MODEL=INPUT/OUTPUT, in US dollars per million tokens`},
		},
		{
			name: "env unterminated quote",
			env:  map[string]string{"RALPH_AGENT_COMMAND": "claude -p 'fix it"},
			want: []string{`invalid agent.command (--agent-command, RALPH_AGENT_COMMAND) = "claude -p 'fix it": has an unterminated ' quote`},
		},
		{
			name: "flag negative turns",
			args: []string{"--max-turns=-2"},
			want: []string{`invalid agent.max-turns (--max-turns, RALPH_AGENT_MAX_TURNS) = -2: must not be negative (0 = unlimited)`},
		},
		{
			name: "heartbeat too short",
			args: []string{"--heartbeat-timeout=500ms"},
			want: []string{`invalid limits.heartbeat-timeout (--heartbeat-timeout, RALPH_LIMITS_HEARTBEAT_TIMEOUT) = 500ms: must be at least 1s`},
		},
		{
			name: "on-limit unknown",
			file: "limits:\n  on-limit: pause\n",
			want: []string{`invalid limits.on-limit (--on-limit, RALPH_LIMITS_ON_LIMIT) = "pause": must be end or ask`},
		},
		{
			name: "iteration not longer than heartbeat",
			file: "limits:\n  iteration-timeout: 10s\n",
			want: []string{`invalid limits.iteration-timeout (--iteration-timeout, RALPH_LIMITS_ITERATION_TIMEOUT) = 10s: must be longer than limits.heartbeat-timeout (10s)`},
		},
		{
			name: "zero limits",
			file: "limits:\n  max-consecutive-failures: 0\n  max-no-progress: 0\n  iterations-per-run: 0\n",
			want: []string{
				`invalid limits.max-consecutive-failures (--max-consecutive-failures, RALPH_LIMITS_MAX_CONSECUTIVE_FAILURES) = 0: must be at least 1`,
				`invalid limits.max-no-progress (--max-no-progress, RALPH_LIMITS_MAX_NO_PROGRESS) = 0: must be at least 1`,
				`invalid limits.iterations-per-run (--iterations-per-run, RALPH_LIMITS_ITERATIONS_PER_RUN) = 0: must be at least 1`,
			},
		},
		{
			name: "fallback on itself, on a command, twice",
			file: "agent:\n  fallback: [claude, command, codex, codex]\n  fallback-after: -1m\n",
			want: []string{
				`invalid agent.fallback (--fallback, RALPH_AGENT_FALLBACK) = "claude command codex codex": entry "claude" is agent.backend itself, which is limited when the fallback is needed`,
				`invalid agent.fallback (--fallback, RALPH_AGENT_FALLBACK) = "claude command codex codex": entry "command" must be claude, codex or gemini`,
				`invalid agent.fallback (--fallback, RALPH_AGENT_FALLBACK) = "claude command codex codex": entry "codex" is named twice`,
				`invalid agent.fallback-after (--fallback-after, RALPH_AGENT_FALLBACK_AFTER) = -1m: must not be negative`,
			},
		},
		{
			name: "flag negative checkpoint every",
			args: []string{"--checkpoint-every=-1"},
			want: []string{`invalid checkpoint.every (--checkpoint-every, RALPH_CHECKPOINT_EVERY) = -1: must not be negative (0 = no checkpoints)`},
		},
		{
			name: "env checkpoint timeout",
			env:  map[string]string{"RALPH_CHECKPOINT_TIMEOUT": "soon"},
			want: []string{`invalid checkpoint.timeout (--checkpoint-timeout, RALPH_CHECKPOINT_TIMEOUT) = "soon": must be a duration such as 90s, 30m or 4h`},
		},
		{
			name: "flag negative checkpoint timeout",
			args: []string{"--checkpoint-timeout=-5m"},
			want: []string{`invalid checkpoint.timeout (--checkpoint-timeout, RALPH_CHECKPOINT_TIMEOUT) = -5m: must not be negative (0 = no limit)`},
		},
		{
			name: "file checkpoint on-timeout",
			file: "checkpoint:\n  on-timeout: maybe\n",
			want: []string{`invalid checkpoint.on-timeout (--checkpoint-on-timeout, RALPH_CHECKPOINT_ON_TIMEOUT) = "maybe": must be one of continue, stop`},
		},
		{
			name: "sandbox mode",
			args: []string{"--sandbox=maybe"},
			want: []string{`invalid agent.sandbox (--sandbox, RALPH_AGENT_SANDBOX) = "maybe": must be one of auto, required, off`},
		},
		{
			name: "network",
			env:  map[string]string{"RALPH_AGENT_NETWORK": "wifi"},
			want: []string{`invalid agent.network (--network, RALPH_AGENT_NETWORK) = "wifi": must be one of internet, open, allow-list, none`},
		},
		{
			name: "network allow with a scheme",
			args: []string{"--network-allow=https://api.example.com/"},
			want: []string{`invalid agent.network-allow (--network-allow, RALPH_AGENT_NETWORK_ALLOW) = "https://api.example.com/": must be a host, host:port or *.domain, without a scheme or path (such as api.anthropic.com or 127.0.0.1:8080)`},
		},
		{
			name: "memory limit that is not a size",
			args: []string{"--limit-memory=lots"},
			want: []string{`invalid agent.limits.memory (--limit-memory, RALPH_AGENT_LIMITS_MEMORY) = "lots": must be a size of at least 16MiB, such as 512MiB or 4GiB`},
		},
		{
			name: "tmp limit too small",
			env:  map[string]string{"RALPH_AGENT_LIMITS_TMP": "1K"},
			want: []string{`invalid agent.limits.tmp (--limit-tmp, RALPH_AGENT_LIMITS_TMP) = "1K": must be a size of at least 16MiB, such as 512MiB or 4GiB`},
		},
		{
			name: "too few processes",
			env:  map[string]string{"RALPH_AGENT_LIMITS_PROCESSES": "3"},
			want: []string{`invalid agent.limits.processes (--limit-processes, RALPH_AGENT_LIMITS_PROCESSES) = 3: must be at least 16: an agent CLI and its tools take a dozen processes and threads`},
		},
		{
			name: "relative sandbox path",
			args: []string{"--sandbox-ro=cache"},
			want: []string{`invalid agent.sandbox-ro (--sandbox-ro, RALPH_AGENT_SANDBOX_RO) = "cache": must be an absolute path or start with ~/`},
		},
		{
			name: "file empty checkpoint on-timeout",
			file: "checkpoint:\n  on-timeout: ''\n",
			want: []string{`invalid checkpoint.on-timeout (--checkpoint-on-timeout, RALPH_CHECKPOINT_ON_TIMEOUT) = "": must be one of continue, stop`},
		},
		{
			name: "env port out of range",
			env:  map[string]string{"RALPH_DEV_PORT": "70000"},
			want: []string{`invalid dev.port (--dev-port, RALPH_DEV_PORT) = 70000: must be between 1 and 65535`},
		},
		{
			name: "flag port zero",
			args: []string{"--dev-port=0"},
			want: []string{`invalid dev.port (--dev-port, RALPH_DEV_PORT) = 0: must be between 1 and 65535`},
		},
		{
			name: "user file ui port negative",
			user: "dev:\n  ui-port: -1\n",
			want: []string{`invalid dev.ui-port (--dev-ui-port, RALPH_DEV_UI_PORT) = -1: must be between 1 and 65535, or 0 for no UI`},
		},
		{
			name: "user file ports equal",
			user: "dev:\n  port: 8233\n",
			want: []string{`invalid dev.ui-port (--dev-ui-port, RALPH_DEV_UI_PORT) = 8233: must differ from dev.port`},
		},
		{
			name: "flag ip",
			args: []string{"--dev-ip=localhost"},
			want: []string{`invalid dev.ip (--dev-ip, RALPH_DEV_IP) = "localhost": must be an IP address such as 127.0.0.1`},
		},
		{
			name: "empty strings",
			user: "task-queue: ''\ndev:\n  namespace: ' '\n",
			want: []string{
				`invalid task-queue (--task-queue, RALPH_TASK_QUEUE) = "": must not be empty`,
				`invalid dev.namespace (--namespace, RALPH_DEV_NAMESPACE) = " ": must not be empty`,
			},
		},
		{
			name: "several sources",
			file: "limits:\n  max-iterations: lots\n",
			env:  map[string]string{"RALPH_DEV_PORT": "port"},
			args: []string{"--iteration-timeout=1s"}, // validated only once all values decode
			want: []string{
				`invalid limits.max-iterations (--max-iterations, RALPH_LIMITS_MAX_ITERATIONS) = "lots": must be a whole number`,
				`invalid dev.port (--dev-port, RALPH_DEV_PORT) = "port": must be a whole number`,
			},
		},
		{
			name: "user file decoding, file over user file",
			user: "limits:\n  max-runtime: long\n  max-iterations: 0\n",
			file: "limits:\n  max-iterations: 3\n",
			want: []string{`invalid limits.max-runtime (--max-runtime, RALPH_LIMITS_MAX_RUNTIME) = "long": must be a duration such as 90s, 30m or 4h`},
		},
		{
			name: "flag agent env name",
			args: []string{"--agent-env=GOOD", "--agent-env=1BAD=x", "--agent-env=ALSO BAD"},
			want: []string{`invalid agent.env (--agent-env, RALPH_AGENT_ENV) = "GOOD 1BAD=x ALSO BAD": entry "1BAD=x" must be NAME or NAME=value, where NAME is letters, digits and _, not starting with a digit`},
		},
		{
			name: "env agent env empty name",
			env:  map[string]string{"RALPH_AGENT_ENV": "=value"},
			want: []string{`invalid agent.env (--agent-env, RALPH_AGENT_ENV) = "=value": entry "=value" must be NAME or NAME=value, where NAME is letters, digits and _, not starting with a digit`},
		},
		{
			name: "user file agent env map",
			user: "agent:\n  env:\n    A: b\n",
			want: []string{`invalid agent.env (--agent-env, RALPH_AGENT_ENV) = map[a:b]: must be a list of arguments`},
		},
		{
			name: "flag task file repairs",
			args: []string{"--max-task-file-repairs=0"},
			want: []string{`invalid limits.max-task-file-repairs (--max-task-file-repairs, RALPH_LIMITS_MAX_TASK_FILE_REPAIRS) = 0: must be at least 1`},
		},
		{
			name: "codec key file and env",
			env:  map[string]string{"RALPH_CODEC_KEY_FILE": "/etc/ralph/key"},
			args: []string{"--codec-key-env=RALPH_KEY"},
			want: []string{`invalid codec.key-env (--codec-key-env, RALPH_CODEC_KEY_ENV) = "RALPH_KEY": must not be set together with codec.key-file (--codec-key-file, RALPH_CODEC_KEY_FILE): choose one`},
		},
		{
			name: "codec key env name",
			user: "codec:\n  key-env: $RALPH_KEY\n",
			want: []string{`invalid codec.key-env (--codec-key-env, RALPH_CODEC_KEY_ENV) = "$RALPH_KEY": must be the name of an environment variable: letters, digits and _, not starting with a digit`},
		},
		{
			name: "codec server without port",
			args: []string{"--codec-server=localhost"},
			want: []string{`invalid codec.server (--codec-server, RALPH_CODEC_SERVER) = "localhost": must be host:port, such as 127.0.0.1:8081`},
		},
		{
			name: "codec server bad port",
			env:  map[string]string{"RALPH_CODEC_SERVER": "127.0.0.1:http"},
			want: []string{`invalid codec.server (--codec-server, RALPH_CODEC_SERVER) = "127.0.0.1:http": must have a port between 1 and 65535`},
		},
		{
			name: "codec server port zero",
			args: []string{"--codec-server=127.0.0.1:0"},
			want: []string{`invalid codec.server (--codec-server, RALPH_CODEC_SERVER) = "127.0.0.1:0": must have a port between 1 and 65535`},
		},
		{
			name: "host id with a slash",
			args: []string{"--host-id=a/b"},
			want: []string{`invalid worker.host-id (--host-id, RALPH_WORKER_HOST_ID) = "a/b": must be letters, digits, '.', '_' and '-' (at most 63), such as the hostname`},
		},
		{
			name: "host timeout too short",
			env:  map[string]string{"RALPH_WORKER_HOST_TIMEOUT": "500ms"},
			want: []string{`invalid worker.host-timeout (--host-timeout, RALPH_WORKER_HOST_TIMEOUT) = 500ms: must be at least 1s`},
		},
		{
			name: "no agents",
			args: []string{"--max-agents=0"},
			want: []string{`invalid worker.max-agents (--max-agents, RALPH_WORKER_MAX_AGENTS) = 0: must be at least 1`},
		},
		{
			name: "metrics address without port",
			args: []string{"--metrics-addr=localhost"},
			want: []string{`invalid worker.metrics-addr (--metrics-addr, RALPH_WORKER_METRICS_ADDR) = "localhost": must be host:port, such as 127.0.0.1:9464`},
		},
		{
			name: "webhook address without port",
			args: []string{"--github-webhook-listen=localhost"},
			want: []string{`invalid github.webhook-listen (--github-webhook-listen, RALPH_GITHUB_WEBHOOK_LISTEN) = "localhost": must be host:port, such as 127.0.0.1:8090`},
		},
		{
			name: "webhook secret variable that is not a name",
			args: []string{"--github-webhook-secret-env=MY SECRET"},
			want: []string{`invalid github.webhook-secret-env (--github-webhook-secret-env, RALPH_GITHUB_WEBHOOK_SECRET_ENV) = "MY SECRET": must be the name of an environment variable: letters, digits and _, not starting with a digit`},
		},
		{
			name: "flag repo without owner",
			args: []string{"--repo=ralph"},
			want: []string{`invalid github.repo (--repo, RALPH_GITHUB_REPO) = "ralph": ` + badRepo},
		},
		{
			name: "env repo with three parts",
			env:  map[string]string{"RALPH_GITHUB_REPO": "github.com/durable-ralph/ralph"},
			want: []string{`invalid github.repo (--repo, RALPH_GITHUB_REPO) = "github.com/durable-ralph/ralph": ` + badRepo},
		},
		{
			name: "file repo with space",
			file: "github:\n  repo: durable ralph/ralph\n",
			want: []string{`invalid github.repo (--repo, RALPH_GITHUB_REPO) = "durable ralph/ralph": ` + badRepo},
		},
		{
			name: "file repo dot dot",
			file: "github:\n  repo: ../ralph\n",
			want: []string{`invalid github.repo (--repo, RALPH_GITHUB_REPO) = "../ralph": ` + badRepo},
		},
		{
			name: "flag api url scheme",
			args: []string{"--github-api-url=ftp://api.github.com/"},
			want: []string{`invalid github.api-url (--github-api-url, RALPH_GITHUB_API_URL) = "ftp://api.github.com/": ` + badAPIURL},
		},
		{
			name: "env api url relative",
			env:  map[string]string{"RALPH_GITHUB_API_URL": "api.github.com"},
			want: []string{`invalid github.api-url (--github-api-url, RALPH_GITHUB_API_URL) = "api.github.com": ` + badAPIURL},
		},
		{
			name: "user file api url without host",
			user: "github:\n  api-url: https://\n",
			want: []string{`invalid github.api-url (--github-api-url, RALPH_GITHUB_API_URL) = "https://": ` + badAPIURL},
		},
		{
			name: "user file api url empty",
			user: "github:\n  api-url: ''\n",
			want: []string{`invalid github.api-url (--github-api-url, RALPH_GITHUB_API_URL) = "": ` + badAPIURL},
		},
		{
			name: "flag api url query",
			args: []string{"--github-api-url=https://ghe.example/api/v3?x=1"},
			want: []string{`invalid github.api-url (--github-api-url, RALPH_GITHUB_API_URL) = "https://ghe.example/api/v3?x=1": must not have a query or fragment: it is the base that API paths are appended to`},
		},
		{
			name: "flag api url credentials",
			args: []string{"--github-api-url=https://me:secret@ghe.example/"},
			want: []string{`invalid github.api-url (--github-api-url, RALPH_GITHUB_API_URL) = "https://me:secret@ghe.example/": must not hold credentials: the token comes from github.token-env`},
		},
		{
			name: "flag token env with dollar",
			args: []string{"--github-token-env=$GITHUB_TOKEN"},
			want: []string{`invalid github.token-env (--github-token-env, RALPH_GITHUB_TOKEN_ENV) = "$GITHUB_TOKEN": ` + badEnvName},
		},
		{
			name: "user file token env empty",
			user: "github:\n  token-env: ''\n",
			want: []string{`invalid github.token-env (--github-token-env, RALPH_GITHUB_TOKEN_ENV) = "": ` + badEnvName},
		},
		{
			name: "env token env starting with digit",
			env:  map[string]string{"RALPH_GITHUB_TOKEN_ENV": "1TOKEN"},
			want: []string{`invalid github.token-env (--github-token-env, RALPH_GITHUB_TOKEN_ENV) = "1TOKEN": ` + badEnvName},
		},
		{
			name: "flag negative write interval",
			args: []string{"--github-write-interval=-1s"},
			want: []string{`invalid github.write-interval (--github-write-interval, RALPH_GITHUB_WRITE_INTERVAL) = -1s: must not be negative (0 = no spacing)`},
		},
		{
			name: "env write interval without unit",
			env:  map[string]string{"RALPH_GITHUB_WRITE_INTERVAL": "2"},
			want: []string{`invalid github.write-interval (--github-write-interval, RALPH_GITHUB_WRITE_INTERVAL) = "2": needs a unit, such as 2s or 2m`},
		},
		{
			name: "file empty label",
			file: "queue:\n  label: ' '\n",
			want: []string{`invalid queue.label (--label, RALPH_QUEUE_LABEL) = " ": must not be empty`},
		},
		{
			name: "flag label with comma",
			args: []string{"--label=ralph,ready"},
			want: []string{`invalid queue.label (--label, RALPH_QUEUE_LABEL) = "ralph,ready": must not contain a comma: it is one label`},
		},
		{
			name: "flag poll interval too short",
			args: []string{"--poll-interval=500ms"},
			want: []string{`invalid queue.poll-interval (--poll-interval, RALPH_QUEUE_POLL_INTERVAL) = 500ms: must be at least 1s`},
		},
		{
			name: "file poll interval zero",
			file: "queue:\n  poll-interval: 0\n",
			want: []string{`invalid queue.poll-interval (--poll-interval, RALPH_QUEUE_POLL_INTERVAL) = 0s: must be at least 1s`},
		},
		{
			name: "flag negative max issues",
			args: []string{"--max-issues=-1"},
			want: []string{`invalid queue.max-issues (--max-issues, RALPH_QUEUE_MAX_ISSUES) = -1: must not be negative (0 = no limit)`},
		},
		{
			name: "env max issues fraction",
			env:  map[string]string{"RALPH_QUEUE_MAX_ISSUES": "1.5"},
			want: []string{`invalid queue.max-issues (--max-issues, RALPH_QUEUE_MAX_ISSUES) = "1.5": must be a whole number`},
		},
		{
			name: "file negative queue cost",
			file: "queue:\n  max-cost-usd: -0.5\n",
			want: []string{`invalid queue.max-cost-usd (--queue-max-cost, RALPH_QUEUE_MAX_COST_USD) = -0.5: must not be negative (0 = no limit)`},
		},
		{
			name: "env queue cost not finite",
			env:  map[string]string{"RALPH_QUEUE_MAX_COST_USD": "NaN"},
			want: []string{`invalid queue.max-cost-usd (--queue-max-cost, RALPH_QUEUE_MAX_COST_USD) = NaN: must be a finite number`},
		},
		{
			name: "env queue cost not a number",
			env:  map[string]string{"RALPH_QUEUE_MAX_COST_USD": "$5"},
			want: []string{`invalid queue.max-cost-usd (--queue-max-cost, RALPH_QUEUE_MAX_COST_USD) = "$5": must be a number`},
		},
		{
			name: "flag base branch like an option",
			args: []string{"--base-branch=-main"},
			want: []string{`invalid queue.base-branch (--base-branch, RALPH_QUEUE_BASE_BRANCH) = "-main": must be a git branch name, or empty for the repository's default branch`},
		},
		{
			name: "file base branch with space",
			file: "queue:\n  base-branch: my branch\n",
			want: []string{`invalid queue.base-branch (--base-branch, RALPH_QUEUE_BASE_BRANCH) = "my branch": must be a git branch name, or empty for the repository's default branch`},
		},
		{
			name: "env draft",
			env:  map[string]string{"RALPH_QUEUE_DRAFT": "yes"},
			want: []string{`invalid queue.draft (--draft, RALPH_QUEUE_DRAFT) = "yes": must be true or false`},
		},
		{
			name: "merge method",
			env:  map[string]string{"RALPH_QUEUE_MERGE_METHOD": "fast-forward"},
			want: []string{`invalid queue.merge-method (--merge-method, RALPH_QUEUE_MERGE_METHOD) = "fast-forward": must be one of squash, merge, rebase`},
		},
		{
			name: "update strategy",
			env:  map[string]string{"RALPH_QUEUE_UPDATE_STRATEGY": "force"},
			want: []string{`invalid queue.update-strategy (--update-strategy, RALPH_QUEUE_UPDATE_STRATEGY) = "force": must be one of merge, rebase`},
		},
		{
			name: "negative rounds",
			env:  map[string]string{"RALPH_QUEUE_MAX_FIX_ROUNDS": "-1", "RALPH_QUEUE_MAX_REVIEW_ROUNDS": "-2"},
			want: []string{
				`invalid queue.max-fix-rounds (--max-fix-rounds, RALPH_QUEUE_MAX_FIX_ROUNDS) = -1: must not be negative (0 = no fix round)`,
				`invalid queue.max-review-rounds (--max-review-rounds, RALPH_QUEUE_MAX_REVIEW_ROUNDS) = -2: must not be negative (0 = no review round)`,
			},
		},
		{
			name: "trusted bot",
			env:  map[string]string{"RALPH_QUEUE_TRUSTED_BOTS": "'evil bot'"},
			want: []string{`invalid queue.trusted-bots (--trusted-bot, RALPH_QUEUE_TRUSTED_BOTS) = "evil bot": must be a bot's login, such as dependabot[bot]`},
		},
		{
			name: "several github and queue",
			user: "github:\n  repo: x\n",
			file: "queue:\n  label: ''\n  max-issues: -1\n",
			args: []string{"--github-api-url=example"},
			want: []string{
				`invalid github.repo (--repo, RALPH_GITHUB_REPO) = "x": ` + badRepo,
				`invalid github.api-url (--github-api-url, RALPH_GITHUB_API_URL) = "example": ` + badAPIURL,
				`invalid queue.label (--label, RALPH_QUEUE_LABEL) = "": must not be empty`,
				`invalid queue.max-issues (--max-issues, RALPH_QUEUE_MAX_ISSUES) = -1: must not be negative (0 = no limit)`,
			},
		},
		{
			name: "section in env",
			env:  map[string]string{"RALPH_DEV": "1"},
			want: []string{"environment variable RALPH_DEV is set, but dev is a group of settings, not a setting: unset it and set RALPH_DEV_* variables such as RALPH_DEV_ENABLED instead"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := setup(t, tt.user, tt.file, tt.env)
			_, err := load(t, ws, tt.args...)
			require.Error(t, err)
			require.Equal(t, strings.Join(tt.want, "\n"), err.Error())
		})
	}
}

func TestLoadUnknownKeys(t *testing.T) {
	tests := []struct {
		name string
		file string
		want string // error, with FILE for the config file
	}{
		{
			name: "typo",
			file: "limits:\n  max-iteration: 5\n",
			want: "unknown key limits.max-iteration in FILE (did you mean limits.max-iterations?)",
		},
		{
			name: "missing section",
			file: "max_iterations: 5\n",
			want: "unknown key max_iterations in FILE (did you mean limits.max-iterations?)",
		},
		{
			name: "unrelated",
			file: "colour: blue\n",
			want: "unknown key colour in FILE",
		},
		{
			name: "section as value",
			file: "git: false\n",
			want: "invalid key git in FILE: it is a group of settings (git.auto-commit, git.allow-dirty, git.protected-paths), not a value",
		},
		{
			name: "several",
			file: "dev:\n  prot: 1\n  enabeld: true\n",
			want: "unknown key dev.enabeld in FILE (did you mean dev.enabled?)\nunknown key dev.prot in FILE (did you mean dev.port?)",
		},
		{
			name: "checkpoint section as value",
			file: "checkpoint: true\n",
			want: "invalid key checkpoint in FILE: it is a group of settings (checkpoint.every, checkpoint.before-complete, checkpoint.timeout, checkpoint.on-timeout), not a value",
		},
		{
			name: "config file cannot name itself",
			file: "config: other.yaml\n",
			want: "unknown key config in FILE",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, file, err := loadRalphYAML(t, tt.file)
			require.Error(t, err)
			require.Equal(t, strings.ReplaceAll(tt.want, "FILE", file), err.Error())
		})
	}
}

func TestLoadValueAsSection(t *testing.T) {
	isolate(t)
	ws := t.TempDir()
	writeFile(t, ws, "ralph.yaml", "limits:\n  max-iterations:\n    value: 5\n")

	_, err := load(t, ws)
	require.ErrorContains(t, err, "invalid limits.max-iterations (--max-iterations, RALPH_LIMITS_MAX_ITERATIONS)")

	_, err = Load(nil, ws)
	require.ErrorContains(t, err, "limits.max-iterations is a single value")
}

func TestLoadEmptiedSection(t *testing.T) {
	// A section whose settings are all commented out is null in YAML; it
	// must not hide the section's defaults.
	state := isolate(t)
	ws := t.TempDir()
	file := writeFile(t, ws, "ralph.yaml", "dev:\n#  port: 7000\nlimits:\n  max-iterations: 5\nagent:\n  model:\n")

	cfg, err := load(t, ws)
	require.NoError(t, err)
	want := defaults(state, ws)
	want.File = file
	want.Limits.MaxIterations = 5
	require.Equal(t, want, cfg)
}

func TestLoadConfigFile(t *testing.T) {
	state := isolate(t)

	t.Run("missing --config", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope.yaml")
		_, err := load(t, t.TempDir(), "--config", missing)
		require.EqualError(t, err, "config file "+missing+" (from --config) does not exist")
	})

	t.Run("missing RALPH_CONFIG", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope.yaml")
		t.Setenv("RALPH_CONFIG", missing)
		_, err := load(t, t.TempDir())
		require.EqualError(t, err, "config file "+missing+" (from RALPH_CONFIG) does not exist")
	})

	t.Run("--config is a directory", func(t *testing.T) {
		dir := t.TempDir()
		_, err := load(t, t.TempDir(), "--config", dir)
		require.EqualError(t, err, "config file "+dir+" (from --config) is a directory")
	})

	t.Run("--config replaces ralph.yaml", func(t *testing.T) {
		ws := t.TempDir()
		writeFile(t, ws, "ralph.yaml", "task-queue: from-workspace\nlimits:\n  max-iterations: 7\n")
		other := writeFile(t, t.TempDir(), "other.yml", "task-queue: from-config\n")

		cfg, err := load(t, ws, "--config="+other)
		require.NoError(t, err)
		require.Equal(t, other, cfg.File)
		require.Equal(t, "from-config", cfg.TaskQueue)
		require.Equal(t, 100, cfg.Limits.MaxIterations)
	})

	t.Run("--config over RALPH_CONFIG", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv("RALPH_CONFIG", writeFile(t, dir, "env.yaml", "task-queue: from-env\n"))
		flag := writeFile(t, dir, "flag.yaml", "task-queue: from-flag\n")

		cfg, err := load(t, t.TempDir(), "--config", flag)
		require.NoError(t, err)
		require.Equal(t, "from-flag", cfg.TaskQueue)
	})

	t.Run("RALPH_CONFIG without extension is YAML", func(t *testing.T) {
		file := writeFile(t, t.TempDir(), "ralphrc", "task-queue: q\n")
		t.Setenv("RALPH_CONFIG", file)

		cfg, err := load(t, t.TempDir())
		require.NoError(t, err)
		require.Equal(t, file, cfg.File)
		require.Equal(t, "q", cfg.TaskQueue)
	})

	t.Run("JSON", func(t *testing.T) {
		file := writeFile(t, t.TempDir(), "ralph.json", `{"limits": {"max-runtime": "1h"}}`)

		cfg, err := load(t, t.TempDir(), "--config", file)
		require.NoError(t, err)
		require.Equal(t, time.Hour, cfg.Limits.MaxRuntime)
	})

	t.Run("no ralph.yaml", func(t *testing.T) {
		ws := t.TempDir()
		cfg, err := load(t, ws)
		require.NoError(t, err)
		require.Equal(t, defaults(state, ws), cfg)
	})

	t.Run("malformed", func(t *testing.T) {
		ws := t.TempDir()
		file := writeFile(t, ws, "ralph.yaml", "limits: [\n")
		_, err := load(t, ws)
		require.ErrorContains(t, err, "read config file "+file+": ")
	})

	t.Run("current directory", func(t *testing.T) {
		ws := t.TempDir()
		file := writeFile(t, ws, "ralph.yaml", "agent:\n  model: here\n")
		t.Chdir(ws)

		cfg, err := load(t, "")
		require.NoError(t, err)
		require.Equal(t, file, cfg.File)
		require.Equal(t, "here", cfg.Agent.Model)
		require.Empty(t, cfg.Workspace)
	})

	t.Run("--workspace finds ralph.yaml", func(t *testing.T) {
		ws := t.TempDir()
		requireFindsWorkspace(t, ws, "--workspace", ws)
	})

	t.Run("RALPH_WORKSPACE finds ralph.yaml", func(t *testing.T) {
		ws := t.TempDir()
		t.Setenv("RALPH_WORKSPACE", ws)
		requireFindsWorkspace(t, ws)
	})

	t.Run("argument overrides --workspace", func(t *testing.T) {
		ws := t.TempDir()
		writeFile(t, ws, "ralph.yaml", "agent:\n  model: argument\n")
		flag := t.TempDir()
		writeFile(t, flag, "ralph.yaml", "agent:\n  model: flag\n")

		cfg, err := load(t, ws, "--workspace", flag)
		require.NoError(t, err)
		require.Equal(t, "argument", cfg.Agent.Model)
		require.Equal(t, ws, cfg.Workspace)
	})
}

func TestLoadUserFile(t *testing.T) {
	t.Run("read", func(t *testing.T) {
		isolate(t)
		ws := t.TempDir()
		user := writeUserFile(t, "limits:\n  max-iterations: 7\n  max-no-progress: 5\ndev:\n  ip: 0.0.0.0\n")
		writeFile(t, ws, "ralph.yaml", "limits:\n  max-no-progress: 9\n")

		cfg, err := load(t, ws)
		require.NoError(t, err)
		require.Equal(t, user, cfg.UserFile)
		require.Equal(t, filepath.Join(ws, "ralph.yaml"), cfg.File)
		require.Equal(t, 7, cfg.Limits.MaxIterations)
		require.Equal(t, 9, cfg.Limits.MaxNoProgress, "ralph.yaml over the user file")
		require.Equal(t, "0.0.0.0", cfg.Dev.IP)
	})

	t.Run("missing", func(t *testing.T) {
		state := isolate(t)
		ws := t.TempDir()
		cfg, err := load(t, ws)
		require.NoError(t, err)
		require.Equal(t, defaults(state, ws), cfg)
	})

	t.Run("unknown key", func(t *testing.T) {
		isolate(t)
		user := writeUserFile(t, "dev:\n  prot: 1\n")
		_, err := load(t, t.TempDir())
		require.EqualError(t, err, "unknown key dev.prot in "+user+" (did you mean dev.port?)")
	})

	t.Run("malformed", func(t *testing.T) {
		isolate(t)
		user := writeUserFile(t, "dev: [\n")
		_, err := load(t, t.TempDir())
		require.ErrorContains(t, err, "read config file "+user+": ")
	})

	t.Run("directory", func(t *testing.T) {
		isolate(t)
		dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "durable-ralph", "config.yaml")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		_, err := load(t, t.TempDir())
		require.EqualError(t, err, "user config file "+dir+" is a directory")
	})

	t.Run("relative XDG_CONFIG_HOME ignored", func(t *testing.T) {
		isolate(t)
		home := t.TempDir()
		t.Setenv("HOME", home)
		t.Setenv("XDG_CONFIG_HOME", "config")
		dir := filepath.Join(home, ".config", "durable-ralph")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		user := writeFile(t, dir, "config.yaml", "agent:\n  model: opus\n")

		cfg, err := load(t, t.TempDir())
		require.NoError(t, err)
		require.Equal(t, user, cfg.UserFile)
		require.Equal(t, "opus", cfg.Agent.Model)
	})

	t.Run("no home", func(t *testing.T) {
		isolate(t)
		t.Setenv("HOME", "")
		t.Setenv("XDG_CONFIG_HOME", "")
		cfg, err := load(t, t.TempDir())
		require.NoError(t, err)
		require.Empty(t, cfg.UserFile)
	})

	t.Run("workspace finds ralph.yaml", func(t *testing.T) {
		isolate(t)
		ws := t.TempDir()
		writeUserFile(t, "workspace: "+ws+"\n")
		requireFindsWorkspace(t, ws)
	})
}

// requireFindsWorkspace gives ws a ralph.yaml and requires that load, with
// args, from another directory and without a workspace argument, finds
// ws and reads its ralph.yaml.
func requireFindsWorkspace(t *testing.T, ws string, args ...string) {
	t.Helper()
	writeFile(t, ws, "ralph.yaml", "agent:\n  model: there\n")
	t.Chdir(t.TempDir())

	cfg, err := load(t, "", args...)
	require.NoError(t, err)
	require.Equal(t, "there", cfg.Agent.Model)
	require.Equal(t, ws, cfg.Workspace)
}

func TestLoadTrusted(t *testing.T) {
	// A valid value of every trusted key, as written in a file.
	tokenFile := filepath.Join(t.TempDir(), "github-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("ghp_trusted0123\n"), 0o600))
	appKeyFile := writeAppKey(t, t.TempDir())
	values := map[string]string{
		"github.token-file":      tokenFile,
		"task-queue":             "q",
		"agent.env":              "[GH_TOKEN]",
		"agent.sandbox":          "off",
		"agent.network":          "open",
		"agent.network-allow":    "[proxy.golang.org]",
		"agent.sandbox-ro":       "[/opt/cache]",
		"agent.sandbox-rw":       "[/var/cache/npm]",
		"agent.limits.processes": "4096",
		"agent.limits.memory":    "8GiB",
		"agent.limits.tmp":       "2GiB",
		"dev.enabled":            "true",
		"dev.state-dir":          "/tmp/ralph-state",
		"dev.ip":                 "0.0.0.0",
		"dev.port":               "7000",
		"dev.ui-port":            "7001",
		"dev.namespace":          "ralph",
		"codec.key-file":         "/etc/ralph/key",
		"codec.key-env":          "RALPH_KEY",
		"codec.server":           "127.0.0.1:8081",
		"github.api-url":         "https://ghe.example/api/v3",
		"github.token-env":       "MY_GITHUB_TOKEN",
		"worker.host-id":         "build-7",
		"worker.max-agents":      "2",
		"worker.metrics-addr":    "127.0.0.1:9464",
		"git.protected-paths":    "[]",

		"github.webhook-listen":     "127.0.0.1:8090",
		"github.webhook-secret-env": "MY_WEBHOOK_SECRET",

		"notify.events":                   "[question, ended]",
		"notify.max-age":                  "1h",
		"notify.ui-url":                   "https://temporal.example.com",
		"notify.telegram.token-env":       "MY_TELEGRAM_TOKEN",
		"notify.telegram.chat-ids":        "[123456789, -1001234567890]",
		"notify.telegram.api-url":         "http://127.0.0.1:8081",
		"notify.slack.webhook-url-env":    "MY_SLACK_WEBHOOK",
		"notify.slack.bot-token-env":      "MY_SLACK_BOT_TOKEN",
		"notify.slack.channel":            `"#ralph"`,
		"notify.slack.api-url":            "http://127.0.0.1:8082/api/",
		"notify.webhook.url":              "https://example.com/hooks/ralph",
		"notify.webhook.secret-env":       "MY_NOTIFY_SECRET",
		"notify.slack.commands-listen":    "127.0.0.1:8091",
		"notify.slack.signing-secret-env": "MY_SLACK_SIGNING_SECRET",
		"notify.workspaces":               "[api=/srv/acme/api]",

		// The app's keys go together: each takes the other two from the
		// environment (withApp).
		"github.app-id":               "12345",
		"github.app-installation-id":  "678",
		"github.app-private-key-file": appKeyFile,
	}
	var trusted []string
	for _, k := range Keys() {
		if k.Trusted {
			trusted = append(trusted, k.Key)
		}
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(values)), trusted)

	for _, key := range trusted {
		s := lookupSpec(key)
		content := yamlFor(key, values[key])
		t.Run(key+"/workspace", func(t *testing.T) {
			isolate(t)
			withApp(t, key, values)
			ws := t.TempDir()
			file := writeFile(t, ws, "ralph.yaml", "limits:\n  max-iterations: 5\n"+content)
			user := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "durable-ralph", "config.yaml")

			_, err := load(t, ws)
			require.EqualError(t, err, "key "+key+" in "+file+" is not allowed in a workspace's ralph.yaml, which comes with the repository: "+
				"it decides where the Temporal server listens, where its state is or what the worker exposes; "+
				"set it with --"+s.flag+", "+s.env()+" or in the user config file "+user)
		})
		for _, src := range []string{"user", "--config", "RALPH_CONFIG"} {
			t.Run(key+"/"+src, func(t *testing.T) {
				isolate(t)
				withApp(t, key, values)
				ws := t.TempDir()
				var args []string
				switch src {
				case "user":
					writeUserFile(t, content)
				case "--config":
					args = append(args, "--config", writeFile(t, ws, "ralph.yaml", content))
				case "RALPH_CONFIG":
					t.Setenv("RALPH_CONFIG", writeFile(t, ws, "ralph.yaml", content))
				}
				_, err := load(t, ws, args...)
				require.NoError(t, err)
			})
		}
	}

	tests := []struct {
		name string
		file string
		want []string // keys in the errors, in order; none for no error
	}{
		{name: "several", file: "dev:\n  port: 7000\n  ip: 0.0.0.0\ntask-queue: q\n", want: []string{"task-queue", "dev.ip", "dev.port"}},
		{name: "dotted key", file: "dev.ip: 0.0.0.0\n", want: []string{"dev.ip"}},
		{name: "upper case", file: "DEV:\n  IP: 0.0.0.0\n", want: []string{"dev.ip"}},
		{name: "emptied", file: "dev:\n  ip:\ncodec:\n"},
		{name: "untrusted keys", file: "agent:\n  command: codex\n  args: [-v]\nworkspace: .\ngit:\n  allow-dirty: true\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, file, err := loadRalphYAML(t, tt.file)
			if len(tt.want) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tt.want))
			for i, key := range tt.want {
				require.True(t, strings.HasPrefix(lines[i], "key "+key+" in "+file+" is not allowed"), lines[i])
			}
		})
	}
}

func TestNotices(t *testing.T) {
	const (
		devWarning   = "warning: the embedded Temporal server and UI listen on %s, beyond this machine: it has no authentication, so anyone who can reach it can start sessions that run any agent command as this user"
		codecWarning = "warning: the codec server listens on %s, beyond this machine: it has no authentication, so anyone who can reach it can decrypt what sessions store in Temporal"
	)
	tests := []struct {
		name string
		user string // user config file, if not empty
		file string // ralph.yaml in the workspace, if not empty
		env  map[string]string
		args []string
		want []string // with FILE for ralph.yaml
	}{
		{name: "defaults"},
		{
			name: "agent command from ralph.yaml",
			file: "agent:\n  command: claude --dangerously-skip-permissions\n",
			want: []string{`using agent command "claude --dangerously-skip-permissions" from FILE`},
		},
		{
			name: "a role's command from ralph.yaml",
			file: "roles:\n  reviewer:\n    enabled: true\n    command: [./review.sh, --strict]\n",
			want: []string{`using roles.reviewer.command "./review.sh --strict" from FILE`},
		},
		{
			name: "agent command list from ralph.yaml over user file",
			user: "agent:\n  command: claude\n",
			file: "agent:\n  command: [./agent.sh, -v]\n",
			want: []string{`using agent command "./agent.sh -v" from FILE`},
		},
		{
			name: "agent command from user file",
			user: "agent:\n  command: codex exec\n",
		},
		{
			name: "agent command from --config",
			args: []string{"--config=FILE"},
			file: "agent:\n  command: codex exec\n",
		},
		{
			name: "agent command from ralph.yaml overridden by flag",
			file: "agent:\n  command: codex exec\n",
			args: []string{"--agent-command=claude"},
		},
		{
			name: "agent command from ralph.yaml overridden by env",
			file: "agent:\n  command: codex exec\n",
			env:  map[string]string{"RALPH_AGENT_COMMAND": "claude"},
		},
		{
			name: "other agent settings from ralph.yaml",
			file: "agent:\n  model: opus\n  args: [-v]\n",
		},
		{name: "dev on 0.0.0.0", args: []string{"--dev", "--dev-ip=0.0.0.0"}, want: []string{fmt.Sprintf(devWarning, "0.0.0.0")}},
		{name: "dev on ::", args: []string{"--dev", "--dev-ip=::"}, want: []string{fmt.Sprintf(devWarning, "::")}},
		{name: "dev on other address", user: "dev:\n  enabled: true\n  ip: 192.0.2.7\n", want: []string{fmt.Sprintf(devWarning, "192.0.2.7")}},
		{
			name: "dev without UI",
			args: []string{"--dev", "--dev-ip=0.0.0.0", "--dev-ui-port=0"},
			want: []string{"warning: the embedded Temporal server listens on 0.0.0.0, beyond this machine: it has no authentication, so anyone who can reach it can start sessions that run any agent command as this user"},
		},
		{name: "dev on 127.0.0.1", args: []string{"--dev", "--dev-ip=127.0.0.1"}},
		{name: "dev on 127.0.0.2", args: []string{"--dev", "--dev-ip=127.0.0.2"}},
		{name: "dev on ::1", args: []string{"--dev", "--dev-ip=::1"}},
		{name: "dev disabled", args: []string{"--dev-ip=0.0.0.0"}},
		{name: "codec server on every interface", args: []string{"--codec-server=:8081"}, want: []string{fmt.Sprintf(codecWarning, "every interface")}},
		{name: "codec server on 0.0.0.0", args: []string{"--codec-server=0.0.0.0:8081"}, want: []string{fmt.Sprintf(codecWarning, "0.0.0.0")}},
		{name: "codec server on localhost", args: []string{"--codec-server=localhost:8081"}},
		{name: "codec server on ::1", args: []string{"--codec-server=[::1]:8081"}},
		{
			name: "all",
			file: "agent:\n  command: codex\n",
			args: []string{"--dev", "--dev-ip=0.0.0.0", "--codec-server=0.0.0.0:8081"},
			want: []string{
				`using agent command "codex" from FILE`,
				fmt.Sprintf(devWarning, "0.0.0.0"),
				fmt.Sprintf(codecWarning, "0.0.0.0"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := setup(t, tt.user, tt.file, tt.env)
			file := strings.NewReplacer("FILE", filepath.Join(ws, "ralph.yaml"))

			cfg, err := load(t, ws, replaceEach(file, tt.args)...)
			require.NoError(t, err)
			require.Equal(t, replaceEach(file, tt.want), cfg.Notices())
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true,
		"LocalHost": true,
		"127.0.0.1": true,
		"127.1.2.3": true,
		"::1":       true,
		"0.0.0.0":   false,
		"::":        false,
		"":          false,
		"192.0.2.1": false,
		"example":   false,
	} {
		require.Equal(t, want, isLoopback(host), host)
	}
}

func TestLoadAgentCommand(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		env      map[string]string
		args     []string
		wantCmd  []string
		wantArgs []string
	}{
		{
			name:     "default",
			wantCmd:  []string{"claude"},
			wantArgs: []string{},
		},
		{
			name:     "flag",
			args:     []string{"--agent-command", `claude --dangerously-skip-permissions --append-system-prompt "be brief"`},
			wantCmd:  []string{"claude", "--dangerously-skip-permissions", "--append-system-prompt", "be brief"},
			wantArgs: []string{},
		},
		{
			name:     "env",
			env:      map[string]string{"RALPH_AGENT_COMMAND": "  npx  '@anthropic-ai/claude-code' -p "},
			wantCmd:  []string{"npx", "@anthropic-ai/claude-code", "-p"},
			wantArgs: []string{},
		},
		{
			name:     "file string",
			file:     "agent:\n  command: codex exec --full-auto\n  args: --model 'gpt 5'\n",
			wantCmd:  []string{"codex", "exec", "--full-auto"},
			wantArgs: []string{"--model", "gpt 5"},
		},
		{
			name:     "file lists",
			file:     "agent:\n  command: [/opt/my agent/bin/agent, --yes]\n  args: [--max-budget, 5, 'a b']\n",
			wantCmd:  []string{"/opt/my agent/bin/agent", "--yes"},
			wantArgs: []string{"--max-budget", "5", "a b"},
		},
		{
			name:     "repeated flag",
			env:      map[string]string{"RALPH_AGENT_ARGS": "--from-env"},
			args:     []string{"--agent-arg", "--allowedTools=Bash,Edit", "--agent-arg", "two words", "--agent-arg=-v"},
			wantCmd:  []string{"claude"},
			wantArgs: []string{"--allowedTools=Bash,Edit", "two words", "-v"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := setup(t, "", tt.file, tt.env)
			cfg, err := load(t, ws, tt.args...)
			require.NoError(t, err)
			require.Equal(t, tt.wantCmd, cfg.Agent.Command)
			require.Equal(t, tt.wantArgs, cfg.Agent.Args)
		})
	}
}

func TestSplitCommandLine(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: []string{}},
		{in: " \t\n", want: []string{}},
		{in: "claude", want: []string{"claude"}},
		{in: "  claude   -p\tx ", want: []string{"claude", "-p", "x"}},
		{in: `claude -p 'fix the "bug"'`, want: []string{"claude", "-p", `fix the "bug"`}},
		{in: `claude -p "it's done"`, want: []string{"claude", "-p", "it's done"}},
		{in: `a'b c'd`, want: []string{"ab cd"}},
		{in: `'' ""`, want: []string{"", ""}},
		{in: `a\ b c`, want: []string{"a b", "c"}},
		{in: `"a \"quoted\" \\ \n word"`, want: []string{`a "quoted" \ \n word`}},
		{in: `'C:\path'`, want: []string{`C:\path`}},
		{in: `claude 'oops`, wantErr: "has an unterminated ' quote"},
		{in: `claude "oops`, wantErr: `has an unterminated " quote`},
		{in: `claude \`, wantErr: "ends in a backslash"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := splitCommandLine(tt.in)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestLoadStateDir(t *testing.T) {
	tests := []struct {
		name    string
		xdg     string // XDG_STATE_HOME; "STATE" is a temporary directory
		home    string // HOME; "HOME" is a temporary directory
		args    []string
		want    string // with STATE and HOME replaced
		wantErr string
	}{
		{name: "XDG_STATE_HOME", xdg: "STATE", home: "HOME", want: "STATE/durable-ralph"},
		{name: "home", home: "HOME", want: "HOME/.local/state/durable-ralph"},
		{name: "relative XDG_STATE_HOME ignored", xdg: "state", home: "HOME", want: "HOME/.local/state/durable-ralph"},
		{name: "flag", xdg: "STATE", home: "HOME", args: []string{"--state-dir=/var/lib/ralph"}, want: "/var/lib/ralph"},
		{name: "tilde", xdg: "STATE", home: "HOME", args: []string{"--state-dir=~/ralph"}, want: "HOME/ralph"},
		{name: "no home, dev disabled", want: ""},
		{
			name:    "no home, dev enabled",
			args:    []string{"--dev"},
			wantErr: `invalid dev.state-dir (--state-dir, RALPH_DEV_STATE_DIR) = "": has no default ($HOME is not defined): set it`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			state, home := t.TempDir(), t.TempDir()
			replace := strings.NewReplacer("STATE", state, "HOME", home)
			t.Setenv("XDG_STATE_HOME", replace.Replace(tt.xdg))
			t.Setenv("HOME", replace.Replace(tt.home))

			cfg, err := load(t, t.TempDir(), tt.args...)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, replace.Replace(tt.want), cfg.Dev.StateDir)
		})
	}
}

func TestLoadChoiceCase(t *testing.T) {
	// Settings with a fixed set of values ignore case and surrounding space.
	tests := []struct {
		env, value string
		want       string
		get        func(Config) string
	}{
		{env: "RALPH_TASK_MODE", value: " PRD ", want: "prd", get: func(c Config) string { return c.Task.Mode }},
		{env: "RALPH_CHECKPOINT_ON_TIMEOUT", value: "Stop ", want: "stop", get: func(c Config) string { return c.Checkpoint.OnTimeout }},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			isolate(t)
			t.Setenv(tt.env, tt.value)
			cfg, err := load(t, t.TempDir())
			require.NoError(t, err)
			require.Equal(t, tt.want, tt.get(cfg))
		})
	}
}

func TestKeys(t *testing.T) {
	keys := Keys()
	require.Len(t, keys, len(specs))

	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs)
	require.NotNil(t, fs.Lookup(configFlag))

	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)

	var names, flags []string
	for _, k := range keys {
		require.NotEmpty(t, k.Description, k.Key)
		require.NotEmpty(t, k.Default, k.Key)
		require.Equal(t, "RALPH_"+strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(k.Key)), k.Env)
		require.NotNil(t, fs.Lookup(k.Flag), "flag --%s of %s", k.Flag, k.Key)
		require.Contains(t, string(doc), "  - "+k.Env+":", "doc.go does not document %s", k.Env)
		require.Contains(t, string(doc), "(--"+k.Flag, "doc.go does not document --%s", k.Flag)
		names = append(names, k.Key)
		flags = append(flags, k.Flag)
	}
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(names))), len(names), "duplicate key")
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(flags))), len(flags), "duplicate flag")

	// Every key is a field of Config, and every field a key.
	require.ElementsMatch(t, names, structKeys(reflect.TypeFor[Config](), ""))

	defaults := make(map[string]string)
	for _, k := range keys {
		defaults[k.Key] = k.Default
	}
	for key, want := range map[string]string{
		"limits.max-runtime":           "4h",
		"limits.iteration-timeout":     "30m",
		"limits.max-cost-usd":          "50",
		"git.auto-commit":              "true",
		"checkpoint.every":             "0",
		"checkpoint.timeout":           "0s",
		"checkpoint.on-timeout":        "continue",
		"limits.max-task-file-repairs": "2",
		"agent.env":                    "none",
		"task.check-command":           `"" (no check)`,
		"github.api-url":               "https://api.github.com/",
		"github.token-env":             "GITHUB_TOKEN (then GH_TOKEN)",
		"github.write-interval":        "1s",
		"queue.label":                  "ralph-ready",
		"queue.poll-interval":          "5m",
		"queue.max-issues":             "0",
		"queue.max-cost-usd":           "0",
		"queue.draft":                  "false",
		"git.protected-paths":          ".github/workflows/**",
	} {
		require.Equal(t, want, defaults[key], key)
	}
}

// structKeys returns the dotted mapstructure keys of the fields of struct t.
func structKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Duration]() {
			keys = append(keys, structKeys(f.Type, prefix+tag+".")...)
			continue
		}
		keys = append(keys, prefix+tag)
	}
	return keys
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                       "0s",
		10 * time.Second:        "10s",
		30 * time.Minute:        "30m",
		4 * time.Hour:           "4h",
		90 * time.Minute:        "1h30m",
		time.Hour + time.Second: "1h0m1s",
		1500 * time.Millisecond: "1.5s",
		-time.Hour:              "-1h",
	} {
		require.Equal(t, want, shortDuration(d), "%v", time.Duration(d))
	}
}

func TestFlagGroups(t *testing.T) {
	for _, tc := range []struct {
		groups   Group
		has, not []string
	}{
		{SessionFlags, []string{"config", "workspace", "max-cost", "model", "check-command", "confirm-complete"}, []string{"dev", "repo", "agent-env", "namespace"}},
		{ConnectionFlags, []string{"config", "dev", "namespace", "state-dir", "dev-port", "task-queue", "codec-key-file"}, []string{"max-cost", "model", "codec-server", "label"}},
		{QueueFlags, []string{"repo", "label", "poll-interval"}, []string{"github-write-interval", "max-iterations", "github-api-url"}},
		{WorkerFlags, []string{"agent-env", "github-write-interval", "codec-server"}, []string{"dev", "max-iterations", "github-api-url"}},
		{GitHubFlags, []string{"github-api-url", "github-token-env"}, []string{"repo", "github-write-interval"}},
	} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		AddFlagGroups(fs, tc.groups)
		for _, f := range tc.has {
			require.NotNil(t, fs.Lookup(f), "group %b has --%s", tc.groups, f)
		}
		for _, f := range tc.not {
			require.Nil(t, fs.Lookup(f), "group %b lacks --%s", tc.groups, f)
		}
	}
	// Every setting with a flag is in exactly one group.
	var n int
	for _, g := range []Group{SessionFlags, QueueFlags, ConnectionFlags, WorkerFlags, GitHubFlags} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		AddFlagGroups(fs, g)
		fs.VisitAll(func(*pflag.Flag) { n++ })
		n-- // --config is in each
	}
	require.Equal(t, len(Keys()), n)

	// Every flag has a topic for help.
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlagGroups(fs, AllFlags)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != configFlag {
			require.Len(t, f.Annotations[TopicAnnotation], 1, "--%s", f.Name)
			require.Contains(t, Topics(), f.Annotations[TopicAnnotation][0], "--%s", f.Name)
		}
	})
}

// The template is valid YAML for a workspace with everything commented
// out, and with every default uncommented.
func TestTemplate(t *testing.T) {
	tmpl := Template()
	for _, k := range Keys() {
		_, name, _ := strings.Cut(k.Key, ".")
		if k.Trusted || k.Key == "workspace" {
			require.NotContains(t, tmpl, "# "+name+":", "a workspace may not set %s", k.Key)
			continue
		}
		require.Contains(t, tmpl, "# "+name+":", k.Key)
	}
	defaults, err := Load(nil, t.TempDir())
	require.NoError(t, err)
	for _, text := range []string{tmpl, regexp.MustCompile(`(?m)^(\s*)# ([a-z-]+: )`).ReplaceAllString(tmpl, "$1$2")} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ralph.yaml"), []byte(text), 0o644))
		cfg, err := Load(nil, dir)
		require.NoError(t, err, text)
		cfg.Workspace, defaults.Workspace = "", ""
		cfg.File, cfg.agentCommandFile, cfg.roleCommandFile, cfg.roleCommandKeys = "", "", "", nil
		require.Equal(t, defaults, cfg)
	}
}

func TestRoleAgent(t *testing.T) {
	exec := AgentConfig{Backend: "claude", Command: []string{"claude", "--verbose"}, Model: "sonnet"}
	tests := []struct {
		name    string
		role    RoleConfig
		backend string
		command []string
		model   string
	}{
		{"empty: the executor's", RoleConfig{}, "claude", []string{"claude", "--verbose"}, "sonnet"},
		{"own model, same backend", RoleConfig{Model: "opus"}, "claude", []string{"claude", "--verbose"}, "opus"},
		{"another backend: its CLI and default model", RoleConfig{Backend: "codex"}, "codex", []string{"codex"}, ""},
		{"another backend, own command", RoleConfig{Backend: "gemini", Command: []string{"/opt/gemini"}, Model: "gemini-2.5-pro"}, "gemini", []string{"/opt/gemini"}, "gemini-2.5-pro"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, c, m := exec.RoleAgent(tc.role)
			require.Equal(t, tc.backend, b)
			require.Equal(t, tc.command, c)
			require.Equal(t, tc.model, m)
		})
	}
}

func TestLoadRoles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ralph.yaml"), []byte("roles:\n  reviewer:\n    every: 4\n    backend: Codex\n    instructions: run make test\n"), 0o644))
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs)
	cfg, err := Load(fs, dir)
	require.NoError(t, err)
	require.True(t, cfg.Roles.Reviewer.On(), "every implies enabled")
	require.Equal(t, "codex", cfg.Roles.Reviewer.Backend)
	require.Equal(t, "run make test", cfg.Roles.Reviewer.Instructions)

	require.NoError(t, fs.Parse([]string{"--reviewer-backend", "aider", "--review-every", "-1"}))
	_, err = Load(fs, dir)
	require.ErrorContains(t, err, `invalid roles.reviewer.backend (--reviewer-backend, RALPH_ROLES_REVIEWER_BACKEND) = "aider": must be one of claude, codex, gemini, command, or empty for agent.backend`)
	require.ErrorContains(t, err, `invalid roles.reviewer.every (--review-every, RALPH_ROLES_REVIEWER_EVERY) = -1: must not be negative`)
}
