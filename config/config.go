package config

import (
	"os"
	"time"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
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
	Notify     NotifyConfig     `mapstructure:"notify"`

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
	// runs is what the workspace's ralph.yaml sets that runs on this
	// machine, when flags and variables do not override it all, for
	// CheckWorkspaceTrusted; nil if nothing.
	runs *workspaceRuns
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
	// Fallback are the backends the executor falls back on, in order,
	// while its usage limit has not reset; FallbackAfter is the least
	// wait for a reset that falls back rather than waits.
	Fallback      []string      `mapstructure:"fallback"`
	FallbackAfter time.Duration `mapstructure:"fallback-after"`
	// Env is extra environment for the agent beyond the built-in
	// allow-list. Each entry is NAME, which passes the worker's variable of
	// that name, or NAME=value; NAME is a valid variable name.
	Env []string `mapstructure:"env"`
	// ResetInterrupted discards the partial changes of an iteration whose
	// worker died, when its agent session cannot be resumed.
	ResetInterrupted bool `mapstructure:"reset-interrupted"`
	// Sandbox is agent.sandbox: auto, required or off; "" is auto for a
	// session and required for an issue queue.
	Sandbox string `mapstructure:"sandbox"`
	// Network is agent.network: internet, allow-list, none or open.
	Network string `mapstructure:"network"`
	// NetworkAllow are hosts the egress proxy lets through.
	NetworkAllow []string `mapstructure:"network-allow"`
	// SandboxRO and SandboxRW are paths added to the sandbox's view.
	SandboxRO []string `mapstructure:"sandbox-ro"`
	SandboxRW []string `mapstructure:"sandbox-rw"`
	// Limits bound what one contained agent run may use.
	Limits AgentLimits `mapstructure:"limits"`
}

// AgentLimits are agent.limits: what one contained agent run may use.
type AgentLimits struct {
	// Processes is the most processes and threads at once.
	Processes int `mapstructure:"processes"`
	// Memory and Tmp are sizes as people write them (4GiB, 512MiB): the
	// memory of the run's processes, and the size of each of its file
	// systems in memory (/tmp, its home, /dev/shm).
	Memory string `mapstructure:"memory"`
	Tmp    string `mapstructure:"tmp"`
}

// Bytes are the run's memory and tmp limits in bytes; a size that does
// not parse (validate refuses it) is 0, the default.
func (l AgentLimits) Bytes() (memory, tmp int64) {
	memory, _ = sandbox.ParseSize(l.Memory)
	tmp, _ = sandbox.ParseSize(l.Tmp)
	return memory, tmp
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
	// OnLimit is what a session does at max cost, iterations or runtime:
	// "end" ends it limited, "ask" asks a person to raise the limit or
	// stop and waits; "" is end for starter run, ask for the queue's
	// issues.
	OnLimit string `mapstructure:"on-limit"`
}

// GitConfig says how the session uses git.
type GitConfig struct {
	// AutoCommit commits the agent's changes after each iteration.
	AutoCommit bool `mapstructure:"auto-commit"`
	// AllowDirty lets a session start with uncommitted changes.
	AllowDirty bool `mapstructure:"allow-dirty"`
	// ProtectedPaths are the patterns of the paths the agent may not
	// change (git.MatchPath); never nil after Load, empty when nothing is
	// protected.
	ProtectedPaths []string `mapstructure:"protected-paths"`
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
	// TokenFile is the file holding the token, with a leading ~ expanded;
	// "" if none. When set, the worker reads the token from it
	// ([GitHubConfig.FileToken]) and not from TokenEnv.
	TokenFile string `mapstructure:"token-file"`
	// AppID, AppInstallationID and AppPrivateKeyFile, all three set, make
	// the worker authenticate as the GitHub App's installation instead of
	// with a token ([GitHubConfig.UsesApp]); 0 and "" are none. The key
	// file has a leading ~ expanded ([GitHubConfig.AppPrivateKey]).
	AppID             int    `mapstructure:"app-id"`
	AppInstallationID int    `mapstructure:"app-installation-id"`
	AppPrivateKeyFile string `mapstructure:"app-private-key-file"`
	// WriteInterval is the least time between two GitHub write requests of
	// one worker; 0 does not space them.
	WriteInterval time.Duration `mapstructure:"write-interval"`
	// WebhookListen is the host:port where the worker serves GitHub
	// webhooks; "" is off.
	WebhookListen string `mapstructure:"webhook-listen"`
	// WebhookSecretEnv is the name of the environment variable holding
	// the webhooks' secret.
	WebhookSecretEnv string `mapstructure:"webhook-secret-env"`
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
	// Parallel is how many issues are worked on at once, from 1 to
	// maxParallel.
	Parallel int `mapstructure:"parallel"`
	// MaxCostUSD is the most the queue's sessions may spend together, in US
	// dollars; 0 is no limit.
	MaxCostUSD float64 `mapstructure:"max-cost-usd"`
	// MaxCostPerDay is the most the queue's sessions may spend in one UTC
	// day before it takes no issue until the next; 0 is no limit.
	MaxCostPerDay float64 `mapstructure:"max-cost-per-day"`
	// BaseBranch is the branch pull requests are based on; "" means the
	// repository's default branch.
	BaseBranch string `mapstructure:"base-branch"`
	// Draft opens pull requests as drafts.
	Draft bool `mapstructure:"draft"`
	// Follow carries a pull request after it is opened: CI, reviews,
	// the base and the merge.
	Follow bool `mapstructure:"follow"`
	// MaxFixRounds bounds the rounds that fix failing checks (and those
	// that bring a moved base in), per pull request.
	MaxFixRounds int `mapstructure:"max-fix-rounds"`
	// ChecksTimeout bounds the wait for a head's checks.
	ChecksTimeout time.Duration `mapstructure:"checks-timeout"`
	// MaxReviewRounds bounds the rounds that answer reviews.
	MaxReviewRounds int `mapstructure:"max-review-rounds"`
	// TrustedBots are bots whose review comments reach a prompt.
	TrustedBots []string `mapstructure:"trusted-bots"`
	// AdoptPRs lets a writer's "@bot <instruction>" on a pull request
	// Ralph did not open run one round on its branch.
	AdoptPRs bool `mapstructure:"adopt-prs"`
	// AutoMerge merges an approved, green pull request with MergeMethod.
	AutoMerge   bool   `mapstructure:"auto-merge"`
	MergeMethod string `mapstructure:"merge-method"`
	// UpdateStrategy brings a moved base in: merge or rebase.
	UpdateStrategy string `mapstructure:"update-strategy"`
}

// PullSettings are the pull request settings of the queue's input.
func (q QueueConfig) PullSettings() contract.PullSettings {
	return contract.PullSettings{
		Follow: q.Follow, MaxFixRounds: q.MaxFixRounds, ChecksTimeout: q.ChecksTimeout, MaxReviewRounds: q.MaxReviewRounds,
		TrustedBots: append([]string(nil), q.TrustedBots...), AutoMerge: q.AutoMerge, MergeMethod: q.MergeMethod, UpdateStrategy: q.UpdateStrategy,
	}
}

// DevConfig configures the embedded Temporal dev server.
type DevConfig struct {
	// Enabled uses the dev server of StateDir, started in the background
	// when none runs there.
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

// NotifyConfig says which events reach people away from the terminal,
// and over which channels (package notify; [Config.NotifySettings]). The
// secrets are not here but in the environment variables the *Env fields
// name.
type NotifyConfig struct {
	// Events are the events sent (contract.NotifyEvents' names); not
	// empty.
	Events []string `mapstructure:"events"`
	// MaxAge is how long a notification a channel fails to take is
	// retried before that channel is given up on it.
	MaxAge time.Duration `mapstructure:"max-age"`
	// UIURL is the base URL of the Temporal UI the messages link to; ""
	// is the dev server's UI.
	UIURL    string              `mapstructure:"ui-url"`
	Telegram TelegramConfig      `mapstructure:"telegram"`
	Slack    SlackConfig         `mapstructure:"slack"`
	Webhook  NotifyWebhookConfig `mapstructure:"webhook"`
	// Workspaces are the workspaces a chat's /run may start, as
	// ALIAS=DIR ([NotifyConfig.Workspace]).
	Workspaces []string `mapstructure:"workspaces"`
}

// TelegramConfig configures notify's Telegram bot: on when the variable
// TokenEnv names is set and ChatIDs is not empty.
type TelegramConfig struct {
	TokenEnv string  `mapstructure:"token-env"`
	ChatIDs  []int64 `mapstructure:"chat-ids"`
	// APIURL is the Bot API server, absolute http or https.
	APIURL string `mapstructure:"api-url"`
}

// SlackConfig configures notify's Slack channel: on when the variable
// WebhookURLEnv names is set, or the variable BotTokenEnv names and
// Channel are.
type SlackConfig struct {
	WebhookURLEnv string `mapstructure:"webhook-url-env"`
	BotTokenEnv   string `mapstructure:"bot-token-env"`
	// Channel is the channel the bot posts in; "" is none.
	Channel string `mapstructure:"channel"`
	// APIURL is the Web API's base URL, absolute http or https.
	APIURL string `mapstructure:"api-url"`
	// CommandsListen is where the worker takes the app's slash commands;
	// "" is off.
	CommandsListen string `mapstructure:"commands-listen"`
	// SigningSecretEnv names the variable holding the app's signing
	// secret.
	SigningSecretEnv string `mapstructure:"signing-secret-env"`
}

// NotifyWebhookConfig configures notify's generic webhook: on when URL is
// set.
type NotifyWebhookConfig struct {
	// URL receives a JSON POST per notification; "" is off.
	URL string `mapstructure:"url"`
	// SecretEnv names the variable holding the secret that signs them.
	SecretEnv string `mapstructure:"secret-env"`
}
