package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/durable-ralph/ralph/contract"
)

// Config is the resolved configuration of a session.
type Config struct {
	// Workspace is the directory of the repository; "" is the current directory.
	Workspace string `mapstructure:"workspace"`
	// TaskQueue is the Temporal task queue of the workflow and its worker.
	TaskQueue string `mapstructure:"task-queue"`

	Agent      AgentConfig      `mapstructure:"agent"`
	Task       TaskConfig       `mapstructure:"task"`
	Limits     Limits           `mapstructure:"limits"`
	Git        GitConfig        `mapstructure:"git"`
	Checkpoint CheckpointConfig `mapstructure:"checkpoint"`
	Roles      RolesConfig      `mapstructure:"roles"`
	GitHub     GitHubConfig     `mapstructure:"github"`
	Queue      QueueConfig      `mapstructure:"queue"`
	Dev        DevConfig        `mapstructure:"dev"`
	Codec      CodecConfig      `mapstructure:"codec"`
	Worker     WorkerConfig     `mapstructure:"worker"`

	// File is the config file that was read, "" if none: the one named by
	// --config or RALPH_CONFIG, or else the workspace's ralph.yaml.
	File string `mapstructure:"-"`
	// UserFile is the user config file that was read, "" if none.
	UserFile string `mapstructure:"-"`

	// agentCommandFile is the workspace's ralph.yaml if agent.command came
	// from it, for Notices.
	agentCommandFile string
	// roleCommandKeys are the roles.*.command keys the workspace's
	// ralph.yaml, roleCommandFile, set, for Notices.
	roleCommandKeys []string
	roleCommandFile string
}

// AgentConfig says how to run the coding agent.
type AgentConfig struct {
	// Backend is the kind of agent: claude, codex, gemini or command.
	Backend string `mapstructure:"backend"`
	// Command is the agent's command line, split into words; never empty
	// after Load, which defaults it to the backend's CLI.
	Command []string `mapstructure:"command"`
	// Prices are MODEL=INPUT/CACHED/OUTPUT entries (see PriceTable).
	Prices []string `mapstructure:"prices"`
	// Model is the model to ask the agent for; "" is the agent's default.
	Model string `mapstructure:"model"`
	// MaxTurns limits the agent's turns in one iteration; 0 is unlimited.
	MaxTurns int `mapstructure:"max-turns"`
	// Args are extra arguments for the agent.
	Args []string `mapstructure:"args"`
	// Env is extra environment for the agent beyond the built-in
	// allow-list. Each entry is NAME, which passes the worker's variable of
	// that name, or NAME=value; NAME is a valid variable name.
	Env []string `mapstructure:"env"`
	// ResetInterrupted discards the partial changes of an iteration whose
	// worker died, when its agent session cannot be resumed.
	ResetInterrupted bool `mapstructure:"reset-interrupted"`
}

// TaskConfig says where the work comes from and how the agent reports it done.
type TaskConfig struct {
	// Mode is "prd", "progress" or "prompt"; "" means detect it from the
	// workspace.
	Mode string `mapstructure:"mode"`
	// CompletionPromise is the text the agent prints when all work is done;
	// "" means the mode's default.
	CompletionPromise string `mapstructure:"completion-promise"`
	// CheckCommand is a shell command, run with sh -c in the workspace, that
	// must exit 0 for the agent's claim that all work is done to count; ""
	// means no check.
	CheckCommand string `mapstructure:"check-command"`
	// InstructionsFile is a file of the workspace (relative to it) whose
	// text is added to every prompt as the project's instructions; ""
	// means none.
	InstructionsFile string `mapstructure:"instructions-file"`
}

// Limits bound a session. A session stops at the first limit it reaches.
type Limits struct {
	// MaxIterations is the most iterations a session runs; at least 1.
	MaxIterations int `mapstructure:"max-iterations"`
	// MaxRuntime is the most wall-clock time a session runs; 0 is no limit.
	MaxRuntime time.Duration `mapstructure:"max-runtime"`
	// MaxCostUSD is the most the agent may spend, in US dollars; 0 is no limit.
	MaxCostUSD float64 `mapstructure:"max-cost-usd"`
	// MaxConsecutiveFailures is how many failed iterations in a row stop the
	// session; at least 1.
	MaxConsecutiveFailures int `mapstructure:"max-consecutive-failures"`
	// MaxNoProgress is how many iterations in a row without progress stop
	// the session; at least 1.
	MaxNoProgress int `mapstructure:"max-no-progress"`
	// MaxTaskFileRepairs is how many iterations in a row may try to repair
	// a task file the agent made unreadable before the session ends as
	// task_file_invalid; at least 1.
	MaxTaskFileRepairs int `mapstructure:"max-task-file-repairs"`
	// IterationTimeout is the time limit of one agent iteration; longer than
	// HeartbeatTimeout.
	IterationTimeout time.Duration `mapstructure:"iteration-timeout"`
	// HeartbeatTimeout is the Temporal heartbeat timeout of a running agent;
	// at least 1s.
	HeartbeatTimeout time.Duration `mapstructure:"heartbeat-timeout"`
	// IterationsPerRun is how many iterations a workflow run does before it
	// continues as new; at least 1.
	IterationsPerRun int `mapstructure:"iterations-per-run"`
}

// GitConfig says how the session uses git.
type GitConfig struct {
	// AutoCommit commits the agent's changes after each iteration.
	AutoCommit bool `mapstructure:"auto-commit"`
	// AllowDirty lets a session start with uncommitted changes.
	AllowDirty bool `mapstructure:"allow-dirty"`
}

// RolesConfig configures the agents of the roles besides the executor,
// whose agent is AgentConfig.
type RolesConfig struct {
	Reviewer ReviewerConfig `mapstructure:"reviewer"`
	Planner  RoleConfig     `mapstructure:"planner"`
}

// ReviewerConfig configures the reviewer.
type ReviewerConfig struct {
	// Enabled runs the reviewer after every completion claim the task
	// file accepts.
	Enabled bool `mapstructure:"enabled"`
	// Every runs it after every Every executor iterations too; 0 is
	// never. It implies Enabled.
	Every        int      `mapstructure:"every"`
	Backend      string   `mapstructure:"backend"`
	Model        string   `mapstructure:"model"`
	Command      []string `mapstructure:"command"`
	Instructions string   `mapstructure:"instructions"`
}

// Agent is the reviewer's agent configuration.
func (r ReviewerConfig) Agent() RoleConfig {
	return RoleConfig{Backend: r.Backend, Model: r.Model, Command: r.Command, Instructions: r.Instructions}
}

// On reports whether the session has a reviewer.
func (r ReviewerConfig) On() bool { return r.Enabled || r.Every > 0 }

// RoleConfig is the agent of one role. Empty fields take the executor's
// (AgentConfig) when the role runs the same backend, else the backend's
// defaults.
type RoleConfig struct {
	Backend      string   `mapstructure:"backend"`
	Model        string   `mapstructure:"model"`
	Command      []string `mapstructure:"command"`
	Instructions string   `mapstructure:"instructions"`
}

// RoleAgent is the agent of a role configured by r: its backend, command
// line and model, with what r leaves empty filled in.
func (a AgentConfig) RoleAgent(r RoleConfig) (backend string, command []string, model string) {
	backend, command, model = r.Backend, r.Command, r.Model
	if backend == "" {
		backend = a.Backend
	}
	if backend == a.Backend {
		if len(command) == 0 {
			command = a.Command
		}
		if model == "" {
			model = a.Model
		}
	}
	if len(command) == 0 {
		command = []string{backendCLIs[backend]}
	}
	return backend, command, model
}

// CheckpointConfig says when a session stops for a human to review its work.
type CheckpointConfig struct {
	// Every asks a human to review the work after every Every iterations;
	// 0 never does.
	Every int `mapstructure:"every"`
	// BeforeComplete makes a human confirm before a session ends complete.
	BeforeComplete bool `mapstructure:"before-complete"`
	// Timeout is how long a checkpoint waits for an answer; 0 waits as long
	// as it takes.
	Timeout time.Duration `mapstructure:"timeout"`
	// OnTimeout is what an unanswered checkpoint does: "continue" goes on,
	// telling the agent nobody answered, and "stop" ends the session as
	// checkpoint_timeout.
	OnTimeout string `mapstructure:"on-timeout"`
}

// GitHubConfig says which GitHub repository the queue works on and how to
// reach it.
type GitHubConfig struct {
	// Repo is the repository as "owner/name"; "" means take it from the URL
	// of the workspace's origin remote.
	Repo string `mapstructure:"repo"`
	// APIURL is the base URL of the GitHub REST API, absolute http or
	// https, ending in "/", such as "https://api.github.com/".
	APIURL string `mapstructure:"api-url"`
	// TokenEnv is the name of the environment variable holding the token.
	// The default, GITHUB_TOKEN, falls back to GH_TOKEN; see [GitHubConfig.Token].
	TokenEnv string `mapstructure:"token-env"`
	// WriteInterval is the least time between two GitHub write requests of
	// one worker; 0 does not space them.
	WriteInterval time.Duration `mapstructure:"write-interval"`
}

// Token returns the name of the environment variable that holds the GitHub
// token, and its value as getenv reports it. That is TokenEnv if its value
// is not empty; else, when TokenEnv is the default GITHUB_TOKEN (or empty),
// GH_TOKEN if its value is not empty; else TokenEnv with an empty value,
// which means there is no token. A nil getenv is [os.Getenv].
func (c GitHubConfig) Token(getenv func(string) string) (name, value string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	name = c.TokenEnv
	if name == "" {
		name = defaultGitHubTokenEnv
	}
	if value := getenv(name); value != "" {
		return name, value
	}
	if name == defaultGitHubTokenEnv {
		if value := getenv(fallbackGitHubTokenEnv); value != "" {
			return fallbackGitHubTokenEnv, value
		}
	}
	return name, ""
}

// QueueConfig says which issues the queue works on and how it opens pull
// requests for them.
type QueueConfig struct {
	// Label is the label of the issues to work on; not empty, no comma.
	Label string `mapstructure:"label"`
	// PollInterval is the time between two looks for labelled issues; at
	// least 1s.
	PollInterval time.Duration `mapstructure:"poll-interval"`
	// MaxIssues is how many issues the queue works on before it stops; 0 is
	// no limit.
	MaxIssues int `mapstructure:"max-issues"`
	// MaxCostUSD is the most the queue's sessions may spend together, in US
	// dollars; 0 is no limit.
	MaxCostUSD float64 `mapstructure:"max-cost-usd"`
	// BaseBranch is the branch pull requests are based on; "" means the
	// repository's default branch.
	BaseBranch string `mapstructure:"base-branch"`
	// Draft opens pull requests as drafts.
	Draft bool `mapstructure:"draft"`
}

// DevConfig configures the embedded Temporal dev server.
type DevConfig struct {
	// Enabled runs the dev server in the process.
	Enabled bool `mapstructure:"enabled"`
	// StateDir holds the dev server's database. It is absolute unless set
	// to a relative path, and "" only if it was not set, the dev server is
	// disabled and there is no home directory to default to.
	StateDir string `mapstructure:"state-dir"`
	// IP is the address the dev server listens on.
	IP string `mapstructure:"ip"`
	// Port is the frontend (gRPC) port.
	Port int `mapstructure:"port"`
	// UIPort is the Web UI port; 0 disables the UI.
	UIPort int `mapstructure:"ui-port"`
	// Namespace is the Temporal namespace.
	Namespace string `mapstructure:"namespace"`
}

// CodecConfig configures the encryption at rest of everything sessions store
// in Temporal. The key is a base64-encoded 32-byte AES-256 key, read from
// KeyFile or from the environment variable KeyEnv; package config neither
// reads nor decodes it. At most one of the two is set; neither means no
// encryption.
type CodecConfig struct {
	// KeyFile is the file holding the key, with a leading ~ expanded;
	// "" if none.
	KeyFile string `mapstructure:"key-file"`
	// KeyEnv is the name of the environment variable holding the key;
	// "" if none.
	KeyEnv string `mapstructure:"key-env"`
	// Server is the host:port where the worker serves a Temporal codec
	// server (HTTP /encode and /decode) for the Temporal UI; "" is none.
	Server string `mapstructure:"server"`
}

// WorkerConfig says how a worker serves its machine.
type WorkerConfig struct {
	// HostID is the stable ID of this machine; Load sets it to the
	// hostname when it is not configured.
	HostID string `mapstructure:"host-id"`
	// HostTimeout is how long a session's workspace activity may wait for
	// a worker of its host before the session shows host_offline.
	HostTimeout time.Duration `mapstructure:"host-timeout"`
	// MaxAgents is the most agent processes the worker runs at once.
	MaxAgents int `mapstructure:"max-agents"`
	// MetricsAddr is the host:port of the worker's Prometheus endpoint;
	// "" is off.
	MetricsAddr string `mapstructure:"metrics-addr"`
}

// AddFlags registers every configuration flag on fs, with its default, and
// the --config flag. The starter and worker call it on their cobra
// commands' flag sets. Like any pflag registration, it panics if fs already
// has a flag of the same name.
func AddFlags(fs *pflag.FlagSet) {
	AddFlagGroups(fs, AllFlags)
}

// ChangedFlags lists the flags of the settings in groups that were set on
// the command line of fs, by name, sorted.
func ChangedFlags(fs *pflag.FlagSet, groups Group) []string {
	var names []string
	for i := range specs {
		s := &specs[i]
		if f := fs.Lookup(s.flag); f != nil && f.Changed && s.group()&groups != 0 {
			names = append(names, "--"+s.flag)
		}
	}
	sort.Strings(names)
	return names
}

// AddFlagGroups registers the --config flag and the flags of the settings
// in groups on fs: each command shows and accepts only its own. Settings
// without a flag here still come from RALPH_* variables and config files.
func AddFlagGroups(fs *pflag.FlagSet, groups Group) {
	fs.String(configFlag, "", fmt.Sprintf("config file (default: <workspace>/%s if it exists) ($%s)", fileName, configEnv))
	for i := range specs {
		s := &specs[i]
		if s.group()&groups == 0 {
			continue
		}
		usage := fmt.Sprintf("%s ($%s)", s.usage, s.env())
		switch s.kind {
		case kindString, kindCommand:
			fs.String(s.flag, s.def.(string), usage)
		case kindInt:
			fs.Int(s.flag, s.def.(int), usage)
		case kindFloat:
			fs.Float64(s.flag, s.def.(float64), usage)
		case kindBool:
			fs.Bool(s.flag, s.def.(bool), usage)
		case kindDuration:
			fs.Duration(s.flag, s.def.(time.Duration), usage)
		case kindArgs:
			fs.StringArray(s.flag, s.def.([]string), usage)
		default:
			panic(fmt.Sprintf("config: key %s has unknown kind %d", s.key, s.kind))
		}
	}
}

// Load resolves Config with precedence flags (only those the user changed)
// > RALPH_* environment variables > config file > user config file >
// defaults, and validates it.
//
// The config file is the one named by the --config flag or else RALPH_CONFIG;
// it must exist. Otherwise it is <workspace>/ralph.yaml if that exists, where
// workspace is the directory the session runs in: the workspace argument, or
// else the workspace key from flags, environment or the user config file, or
// else the current directory. A non-empty workspace argument (such as a
// positional argument of the command) also overrides the workspace key.
//
// The user config file is $XDG_CONFIG_HOME/durable-ralph/config.yaml, or
// ~/.config/durable-ralph/config.yaml if XDG_CONFIG_HOME is unset or
// relative; it need not exist. The workspace's ralph.yaml comes with the
// repository, so it may not set trusted keys (where the Temporal server
// listens, where its state is, what the worker exposes): that is an error.
// A file named by --config or RALPH_CONFIG, chosen by the user, may.
//
// fs may be nil, or lack flags, when there are no flags to honour.
// Errors name the offending key with its flag and environment variable.
func Load(fs *pflag.FlagSet, workspace string) (Config, error) {
	if err := checkSectionEnv(); err != nil {
		return Config{}, err
	}

	v := viper.New()
	v.SetEnvPrefix(envPrefix)
	v.SetEnvKeyReplacer(envReplacer)
	v.AutomaticEnv()
	for i := range specs {
		s := &specs[i]
		v.SetDefault(s.key, s.def)
		if f := lookupFlag(fs, s.flag); f != nil {
			if err := v.BindPFlag(s.key, f); err != nil {
				return Config{}, fmt.Errorf("bind flag --%s to %s: %w", s.flag, s.key, err)
			}
		}
	}

	// The user file comes first: it has the lowest precedence of the files,
	// and its workspace key may say where to look for ralph.yaml.
	userFile, err := findUserFile()
	if err != nil {
		return Config{}, err
	}
	if userFile != "" {
		if _, err := readFile(v, userFile); err != nil {
			return Config{}, err
		}
		if err := checkKeys(v, userFile); err != nil {
			return Config{}, err
		}
	}

	file, inWorkspace, err := findFile(fs, v, workspace)
	if err != nil {
		return Config{}, err
	}
	var agentCommandFile string
	var roleCommandKeys []string
	if file != "" {
		fv, err := readFile(v, file)
		if err != nil {
			return Config{}, err
		}
		if err := checkKeys(v, file); err != nil {
			return Config{}, err
		}
		if inWorkspace {
			if err := checkTrusted(fv, file); err != nil {
				return Config{}, err
			}
			if fv.IsSet("agent.command") && !setOutsideFiles(fs, lookupSpec("agent.command")) {
				agentCommandFile = file
			}
			for _, key := range []string{"roles.reviewer.command", "roles.planner.command"} {
				if fv.IsSet(key) && !setOutsideFiles(fs, lookupSpec(key)) {
					roleCommandKeys = append(roleCommandKeys, key)
				}
			}
		}
	}

	var cfg Config
	if err := v.Unmarshal(&cfg, viper.DecodeHook(decodeHook)); err != nil {
		return Config{}, decodeError(v, err)
	}
	cfg.File = file
	cfg.UserFile = userFile
	cfg.agentCommandFile = agentCommandFile
	if len(roleCommandKeys) > 0 {
		cfg.roleCommandKeys, cfg.roleCommandFile = roleCommandKeys, file
	}
	if workspace != "" {
		cfg.Workspace = workspace
	}
	cfg.Task.Mode = strings.ToLower(strings.TrimSpace(cfg.Task.Mode))
	cfg.Agent.Backend = strings.ToLower(strings.TrimSpace(cfg.Agent.Backend))
	cfg.Roles.Reviewer.Backend = strings.ToLower(strings.TrimSpace(cfg.Roles.Reviewer.Backend))
	cfg.Roles.Planner.Backend = strings.ToLower(strings.TrimSpace(cfg.Roles.Planner.Backend))
	cfg.Checkpoint.OnTimeout = strings.ToLower(strings.TrimSpace(cfg.Checkpoint.OnTimeout))
	if u, reason := normalizeAPIURL(cfg.GitHub.APIURL); reason == "" {
		cfg.GitHub.APIURL = u
	}
	if err := cfg.resolveStateDir(); err != nil {
		return Config{}, err
	}
	if err := cfg.resolveKeyFile(); err != nil {
		return Config{}, err
	}
	if err := cfg.resolveHostID(); err != nil {
		return Config{}, err
	}
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	if err := cfg.resolveAgentCommand(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// lookupFlag returns the flag called name in fs, or nil.
func lookupFlag(fs *pflag.FlagSet, name string) *pflag.Flag {
	if fs == nil {
		return nil
	}
	return fs.Lookup(name)
}

// checkSectionEnv reports environment variables named after a section, such
// as RALPH_DEV. Viper would let one hide every key of its section (RALPH_DEV
// would hide RALPH_DEV_PORT and the defaults of dev.*), so they are errors
// rather than silently wrong settings.
func checkSectionEnv() error {
	var errs []error
	seen := make(map[string]bool)
	for i := range specs {
		s := &specs[i]
		section, _, ok := strings.Cut(s.key, ".")
		if !ok || seen[section] {
			continue
		}
		seen[section] = true
		name := envPrefix + "_" + envReplacer.Replace(strings.ToUpper(section))
		if os.Getenv(name) != "" {
			errs = append(errs, fmt.Errorf("environment variable %s is set, but %s is a group of settings, not a setting: unset it and set %s_* variables such as %s instead",
				name, section, name, s.env()))
		}
	}
	return errors.Join(errs...)
}

// Notices returns the lines a command prints when it starts: that the
// agent command comes from the workspace's ralph.yaml, which the repository
// controls, and warnings about servers that listen beyond this machine.
func (c Config) Notices() []string {
	var notices []string
	if c.agentCommandFile != "" {
		notices = append(notices, fmt.Sprintf("using agent command %s from %s",
			formatValue(c.Agent.Command), c.agentCommandFile))
	}
	for _, key := range c.roleCommandKeys {
		command := c.Roles.Planner.Command
		if key == "roles.reviewer.command" {
			command = c.Roles.Reviewer.Command
		}
		notices = append(notices, fmt.Sprintf("using %s %s from %s", key, formatValue(command), c.roleCommandFile))
	}
	if c.Dev.Enabled && !isLoopback(c.Dev.IP) {
		what := "the embedded Temporal server listens"
		if c.Dev.UIPort != 0 {
			what = "the embedded Temporal server and UI listen"
		}
		notices = append(notices, fmt.Sprintf("warning: %s on %s, beyond this machine: "+
			"it has no authentication, so anyone who can reach it can start sessions that run any agent command as this user",
			what, c.Dev.IP))
	}
	if host, _, err := net.SplitHostPort(c.Codec.Server); err == nil && !isLoopback(host) {
		if host == "" {
			host = "every interface"
		}
		notices = append(notices, fmt.Sprintf("warning: the codec server listens on %s, beyond this machine: "+
			"it has no authentication, so anyone who can reach it can decrypt what sessions store in Temporal",
			host))
	}
	return notices
}

// isLoopback reports whether host, an IP address or "localhost", is only
// reachable from this machine. Unspecified addresses such as 0.0.0.0 and ::
// are every interface, not loopback.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// setOutsideFiles reports whether s is set by a flag on the command line or
// by its environment variable, which take precedence over every file.
func setOutsideFiles(fs *pflag.FlagSet, s *spec) bool {
	if f := lookupFlag(fs, s.flag); f != nil && f.Changed {
		return true
	}
	return os.Getenv(s.env()) != "" // viper treats empty as unset
}

// checkTrusted reports the trusted keys set by the workspace's config file
// file, read into fv. They are errors rather than silently ignored: ignoring
// them would leave a user puzzled why dev.port in ralph.yaml has no effect,
// and would hide that a repository tried to choose where the server
// listens or what the worker exposes.
func checkTrusted(fv *viper.Viper, file string) error {
	var set []*spec
	for _, key := range fv.AllKeys() {
		if s, ok := specByKey[key]; ok && s.trusted && fv.Get(key) != nil {
			set = append(set, s)
		}
	}
	slices.SortFunc(set, func(a, b *spec) int { return a.index() - b.index() })

	userFile, err := userFilePath()
	if err != nil {
		userFile = filepath.Join("$XDG_CONFIG_HOME", stateDirName, userFileName)
	}
	var errs []error
	for _, s := range set {
		errs = append(errs, fmt.Errorf("key %s in %s is not allowed in a workspace's %s, which comes with the repository: "+
			"it decides where the Temporal server listens, where its state is or what the worker exposes; "+
			"set it with --%s, %s or in the user config file %s",
			s.key, file, fileName, s.flag, s.env(), userFile))
	}
	return errors.Join(errs...)
}

// userFilePath returns $XDG_CONFIG_HOME/durable-ralph/config.yaml, or
// ~/.config/durable-ralph/config.yaml if XDG_CONFIG_HOME is unset or,
// against the XDG Base Directory Specification, relative.
func userFilePath() (string, error) {
	if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, stateDirName, userFileName), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".config", stateDirName, userFileName), nil
}

// findUserFile returns the user config file, "" if there is none.
func findUserFile() (string, error) {
	name, err := userFilePath()
	if err != nil {
		// No home directory, so no user file: do not fail a worker
		// without $HOME.
		return "", nil
	}
	info, err := os.Stat(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("user config file %s: %w", name, err)
	case info.IsDir():
		return "", fmt.Errorf("user config file %s is a directory", name)
	}
	return name, nil
}

// findFile returns the config file to read, "" if none, and whether it is
// the workspace's ralph.yaml rather than a file the user named.
func findFile(fs *pflag.FlagSet, v *viper.Viper, workspace string) (string, bool, error) {
	var name, source string
	if f := lookupFlag(fs, configFlag); f != nil && f.Changed {
		name, source = f.Value.String(), "--"+configFlag
	} else if env := os.Getenv(configEnv); env != "" {
		name, source = env, configEnv
	}
	if name != "" {
		info, err := os.Stat(name)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return "", false, fmt.Errorf("config file %s (from %s) does not exist", name, source)
		case err != nil:
			return "", false, fmt.Errorf("config file %s (from %s): %w", name, source, err)
		case info.IsDir():
			return "", false, fmt.Errorf("config file %s (from %s) is a directory", name, source)
		}
		return absPath(name), false, nil
	}

	dir := workspace
	if dir == "" {
		// Flags, environment and the user file: ralph.yaml is not read yet.
		dir = v.GetString("workspace")
	}
	name = filepath.Join(dir, fileName)
	info, err := os.Stat(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("config file %s: %w", name, err)
	case info.IsDir():
		return "", false, fmt.Errorf("config file %s is a directory", name)
	}
	return absPath(name), true, nil
}

// absPath returns name made absolute, or name if that fails.
func absPath(name string) string {
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return name
}

// readFile reads the config file name into v, over any file read before,
// and returns the file's own viper. It reads the file with a viper of its
// own and merges only the values that are set, so that an emptied section
// ("dev:" with every line below commented out) is ignored instead of hiding
// the section's defaults.
func readFile(v *viper.Viper, name string) (*viper.Viper, error) {
	fv := viper.New()
	fv.SetConfigFile(name)
	switch strings.TrimPrefix(filepath.Ext(name), ".") {
	case "yaml", "yml", "json", "toml":
	default:
		fv.SetConfigType("yaml")
	}
	if err := fv.ReadInConfig(); err != nil {
		return nil, fmt.Errorf("read config file %s: %w", name, err)
	}
	if err := v.MergeConfigMap(fv.AllSettings()); err != nil {
		return nil, fmt.Errorf("read config file %s: %w", name, err)
	}
	return fv, nil
}

// checkKeys reports keys in the config file that are not settings: all keys
// of v except the known ones come from the file, since the file read before
// it, if any, has passed this check.
func checkKeys(v *viper.Viper, file string) error {
	var unknown []string
	for _, key := range v.AllKeys() {
		if _, ok := specByKey[key]; !ok {
			unknown = append(unknown, key)
		}
	}
	slices.Sort(unknown)

	var errs []error
	for _, key := range unknown {
		errs = append(errs, unknownKeyError(key, file))
	}
	return errors.Join(errs...)
}

// unknownKeyError explains why key, found in file, is not a setting.
func unknownKeyError(key, file string) error {
	var section []string // keys in the section called key
	for i := range specs {
		if strings.HasPrefix(specs[i].key, key+".") {
			section = append(section, specs[i].key)
		}
		if strings.HasPrefix(key, specs[i].key+".") {
			return fmt.Errorf("invalid key %s in %s: %s is a single value, not a group of settings", key, file, specs[i].key)
		}
	}
	if len(section) > 0 {
		return fmt.Errorf("invalid key %s in %s: it is a group of settings (%s), not a value", key, file, strings.Join(section, ", "))
	}
	if s := suggest(key); s != "" {
		return fmt.Errorf("unknown key %s in %s (did you mean %s?)", key, file, s)
	}
	return fmt.Errorf("unknown key %s in %s", key, file)
}

// suggest returns the known key closest to the unknown key, or "".
// A key with the same last element (max_iterations at the top level for
// limits.max-iterations) or within a few typos counts as close.
func suggest(key string) string {
	norm := strings.ReplaceAll(key, "_", "-")
	leaf := norm[strings.LastIndex(norm, ".")+1:]
	best, bestDist := "", 3 // at most 2 edits
	for i := range specs {
		k := specs[i].key
		if k[strings.LastIndex(k, ".")+1:] == leaf {
			return k
		}
		if d := editDistance(norm, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance returns the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// resolveKeyFile expands a leading ~ in Codec.KeyFile.
func (c *Config) resolveKeyFile() error {
	name, err := expandHome(c.Codec.KeyFile)
	if err != nil {
		return &fieldError{spec: lookupSpec("codec.key-file"), value: c.Codec.KeyFile, reason: err.Error()}
	}
	c.Codec.KeyFile = name
	return nil
}

// expandHome replaces a leading ~ in name by the home directory.
func expandHome(name string) (string, error) {
	if name != "~" && !strings.HasPrefix(name, "~/") {
		return name, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot expand ~: %w", err)
	}
	return filepath.Join(home, name[1:]), nil
}

// resolveStateDir expands a leading ~ in Dev.StateDir and defaults it.
func (c *Config) resolveStateDir() error {
	s := lookupSpec("dev.state-dir")
	dir := c.Dev.StateDir
	if dir == "" {
		d, err := defaultStateDir()
		if err != nil {
			if !c.Dev.Enabled {
				// Nothing needs it; do not fail a worker without $HOME.
				return nil
			}
			return &fieldError{spec: s, value: dir, reason: fmt.Sprintf("has no default (%v): set it", err)}
		}
		c.Dev.StateDir = d
		return nil
	}
	expanded, err := expandHome(dir)
	if err != nil {
		return &fieldError{spec: s, value: dir, reason: err.Error()}
	}
	c.Dev.StateDir = expanded
	return nil
}

// defaultStateDir returns $XDG_STATE_HOME/durable-ralph, or
// ~/.local/state/durable-ralph if XDG_STATE_HOME is unset or, against the
// XDG Base Directory Specification, relative.
func defaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, stateDirName), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", stateDirName), nil
}

// resolveHostID sets worker.host-id to the hostname when it is not set.
func (c *Config) resolveHostID() error {
	c.Worker.HostID = strings.TrimSpace(c.Worker.HostID)
	if c.Worker.HostID != "" {
		return nil
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		return fmt.Errorf("worker.host-id is not set and the hostname is unknown (%v): set --host-id or %s", err, lookupSpec("worker.host-id").env())
	}
	c.Worker.HostID = name
	return nil
}

// backendCLIs are the agent.backend values and the CLI each runs when
// agent.command is not set; the command backend has none.
var backendCLIs = map[string]string{"claude": "claude", "codex": "codex", "gemini": "gemini", "command": ""}

// backendNames are the agent.backend values, in the order of the docs.
var backendNames = []string{"claude", "codex", "gemini", "command"}

// BackendNames are the values agent.backend accepts.
func BackendNames() []string { return append([]string(nil), backendNames...) }

// resolveAgentCommand sets agent.command to the backend's CLI when it is
// not set.
func (c *Config) resolveAgentCommand() error {
	if len(c.Agent.Command) > 0 {
		return nil
	}
	cli := backendCLIs[c.Agent.Backend]
	if cli == "" {
		return &fieldError{spec: lookupSpec("agent.command"), value: c.Agent.Command,
			reason: "must be set when agent.backend is command: the command line of the agent to loop, such as [my-agent, --flag]"}
	}
	c.Agent.Command = []string{cli}
	return nil
}

// PriceTable is agent.prices as a table.
func (a AgentConfig) PriceTable() (contract.Prices, error) {
	return parsePrices(a.Prices)
}

// parsePrices reads MODEL=INPUT/CACHED/OUTPUT or MODEL=INPUT/OUTPUT
// entries, in US dollars per million tokens.
func parsePrices(entries []string) (contract.Prices, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	prices := contract.Prices{}
	for _, e := range entries {
		model, spec, ok := strings.Cut(e, "=")
		model = strings.ToLower(strings.TrimSpace(model))
		parts := strings.Split(spec, "/")
		if !ok || model == "" || (len(parts) != 2 && len(parts) != 3) {
			return nil, fmt.Errorf("entry %q must be MODEL=INPUT/CACHED/OUTPUT or MODEL=INPUT/OUTPUT, in US dollars per million tokens", e)
		}
		nums := make([]float64, len(parts))
		for i, p := range parts {
			n, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || n < 0 || math.IsNaN(n) || math.IsInf(n, 0) {
				return nil, fmt.Errorf("entry %q: %q is not a price (a number of US dollars, at least 0)", e, p)
			}
			nums[i] = n
		}
		p := contract.Price{Input: nums[0], Output: nums[len(nums)-1]}
		if len(nums) == 3 {
			p.CachedInput = nums[1]
		}
		prices[model] = p
	}
	return prices, nil
}
