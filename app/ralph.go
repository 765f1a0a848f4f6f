// Package app wires the pieces the commands share: the Temporal client
// (configured like the temporal CLI), the embedded development server, the
// worker that runs sessions, and the session input built from Config.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/activities/chat"
	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/app/metrics"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/attempts"
	"github.com/durable-ralph/ralph/internal/codec"
	"github.com/durable-ralph/ralph/internal/devserver"
	"github.com/durable-ralph/ralph/redact"
	"github.com/durable-ralph/ralph/sandbox"
	"github.com/durable-ralph/ralph/workflows"
)

// SearchAttributes are the custom search attributes sessions upsert. A
// real cluster needs them created once (see docs/operations.md).
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		contract.SearchRalphStatus:     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		contract.SearchRalphIteration:  enumspb.INDEXED_VALUE_TYPE_INT,
		contract.SearchRalphCostUSD:    enumspb.INDEXED_VALUE_TYPE_DOUBLE,
		contract.SearchRalphRepo:       enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		contract.SearchRalphIssue:      enumspb.INDEXED_VALUE_TYPE_INT,
		contract.SearchRalphHost:       enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		contract.SearchRalphForkedFrom: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// StartDevServer starts the embedded Temporal server and UI described by
// cfg in this process, persisted under cfg.StateDir, which it locks and
// where it records itself (package devserver).
//
// A non-empty codecServer (host:port) is the codec server the UI asks to
// show encrypted payloads.
func StartDevServer(ctx context.Context, cfg config.DevConfig, codecServer string) (*devserver.Server, error) {
	endpoint := ""
	if codecServer != "" {
		endpoint = "http://" + codecServer
	}
	srv, err := devserver.Start(ctx, devserver.Options{
		CodecEndpoint:    endpoint,
		StateDir:         cfg.StateDir,
		IP:               cfg.IP,
		Port:             cfg.Port,
		UIPort:           cfg.UIPort,
		Namespace:        cfg.Namespace,
		SearchAttributes: SearchAttributes(),
	})
	if err != nil {
		return nil, fmt.Errorf("start embedded Temporal server (state in %s): %w", cfg.StateDir, err)
	}
	return srv, nil
}

// ClientOptions loads the client options the way the temporal CLI does
// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_PROFILE, the config
// file). A non-empty hostPort and namespace override them, which is how
// --dev points the commands at the embedded server.
//
// A non-nil cdc encrypts every payload and failure message the client
// writes, and decrypts what it reads.
func ClientOptions(hostPort, namespace string, cdc *codec.Codec) (client.Options, error) {
	opts, err := envconfig.LoadDefaultClientOptions()
	if err != nil {
		return client.Options{}, fmt.Errorf("load Temporal client settings: %w", err)
	}
	if hostPort != "" {
		opts.HostPort = hostPort
	}
	if namespace != "" && (opts.Namespace == "" || hostPort != "") {
		opts.Namespace = namespace
	}
	if opts.HostPort == "" {
		opts.HostPort = client.DefaultHostPort
	}
	if cdc != nil {
		opts.DataConverter = cdc.DataConverter()
		opts.FailureConverter = cdc.FailureConverter()
	}
	if opts.Logger == nil {
		opts.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}
	return opts, nil
}

// Dial connects to Temporal and checks that the server answers. A server
// on this machine's loopback (the embedded one, a local dev server) is
// spoken to without gRPC's gzip, the SDK's default: over loopback it
// saves no time and costs both sides CPU on every call (about 0.5 ms per
// iteration of a session, request and response). A GrpcCompression set
// in opts is kept.
func Dial(ctx context.Context, opts client.Options) (client.Client, error) {
	if opts.ConnectionOptions.GrpcCompression == nil && loopback(opts.HostPort) {
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w", opts.HostPort, opts.Namespace, err)
	}
	return c, nil
}

// loopback reports whether hostPort names this machine's loopback.
func loopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Reachable reports whether something accepts TCP connections at hostPort.
func Reachable(hostPort string) bool {
	conn, err := net.DialTimeout("tcp", hostPort, 500*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// WorkerOptions say what a machine's worker serves.
type WorkerOptions struct {
	// TaskQueue is the shared task queue (task-queue).
	TaskQueue string
	// HostID is the machine's ID (worker.host-id): the worker also serves
	// contract.HostTaskQueue(TaskQueue, HostID).
	HostID string
	// MaxAgents caps the agents running at once (worker.max-agents).
	MaxAgents int
	// Metrics, when not nil, is told about iterations and agent slots.
	Metrics *metrics.Metrics
	// Identity is the workers' identity; "" is the client's.
	Identity string
	// Chat sends the notifications and serves the chat inbox (NewChat);
	// nil sends nothing.
	Chat *chat.Activities
	// AttemptsDir keeps the records of the iteration attempts running
	// (internal/attempts); "" keeps none.
	AttemptsDir string
	// RecordsDir keeps what the worker reads back of its iterations
	// (activities.Agent.Records); "" keeps none.
	RecordsDir string
	// ClonesDir is where the worker clones repositories
	// (activities.Agent.ClonesDir); "" clones none.
	ClonesDir string
}

// WorkerOptionsOf are the worker options cfg configures.
func WorkerOptionsOf(cfg config.Config) WorkerOptions {
	o := WorkerOptions{TaskQueue: cfg.TaskQueue, HostID: cfg.Worker.HostID, MaxAgents: cfg.Worker.MaxAgents}
	if cfg.Dev.StateDir != "" {
		o.AttemptsDir = AttemptsDir(cfg.Dev.StateDir, cfg.Worker.HostID)
		o.RecordsDir = RecordsDir(cfg.Dev.StateDir)
	}
	o.ClonesDir = ClonesDir(os.Getenv)
	return o
}

// Worker is what runs sessions on one machine: a worker on the shared task
// queue (workflows, GitHub, and the activities of sessions from before
// hosts existed) and one on the host's own queue, where the sessions whose
// workspaces are on this machine run everything that touches them.
type Worker struct {
	c            client.Client
	attempts     *attempts.Dir
	shared, host worker.Worker
	// chat serves the chat activities; nil without Telegram.
	chat worker.Worker
}

// NewWorker creates the worker of a machine. It shares agent's slots
// (worker.max-agents) between both queues and tells each session when its
// iteration waits for one.
func NewWorker(c client.Client, opts WorkerOptions, agent *activities.Agent, gh *github.Activities) *Worker {
	hostAgent(c, opts, agent)
	if m := opts.Metrics; m != nil {
		agent.Observe = m.ObserveIteration
		m.WatchAgents(agent.Slots)
	}
	if agent.GitHubApp == nil {
		// git and the API share the app's tokens.
		agent.GitHubApp = gh.App
	}
	red := &secrets{known: redact.New(append(os.Environ(), agent.Env...), agent.Secrets...)}
	if gh.App != nil {
		red.later = gh.App.Tokens
	}
	// What checks printed is redacted before it is cut to size, so that
	// no cut leaves part of a secret.
	gh.Redact = red.String
	base := worker.Options{
		Interceptors: []interceptor.WorkerInterceptor{
			&redactor{r: red},
		},
		// Let an iteration that is being cancelled kill its agent and
		// report before the worker exits.
		WorkerStopTimeout: WorkerStopTimeout,
		// A running iteration's heartbeat carries the live view of its
		// agent: send it as often as the agent beats, not at 80% of the
		// heartbeat timeout.
		MaxHeartbeatThrottleInterval: activities.DefaultHeartbeatInterval,
		Identity:                     opts.Identity,
		// Sessions finish their iterations in bursts (many agents
		// started together end together): a fixed two pollers take a
		// burst of workflow tasks two round trips at a time, and each
		// waits behind the others (2.9 s an iteration at 200 sessions).
		// The server's backlog scales the pollers up and down instead.
		WorkflowTaskPollerBehavior: worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{}),
		ActivityTaskPollerBehavior: worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{}),
	}
	shared := worker.New(c, opts.TaskQueue, base)
	workflows.Register(shared)
	shared.RegisterActivity(agent)
	shared.RegisterActivity(gh)
	waiter := &sessionWaiter{c: c}
	shared.RegisterActivityWithOptions(waiter.AwaitSession, activity.RegisterOptions{Name: contract.ActivityAwaitSession})
	shared.RegisterActivityWithOptions(waiter.StillRunning, activity.RegisterOptions{Name: contract.ActivityStillRunning})
	ch := opts.Chat
	if ch == nil {
		ch = &chat.Activities{}
	}
	shared.RegisterActivityWithOptions(ch.Notify, activity.RegisterOptions{Name: contract.ActivityNotify})
	shared.RegisterActivityWithOptions(ch.Notifies, activity.RegisterOptions{Name: contract.ActivityNotifies})

	// The agents are capped by the slots, not by the worker: an iteration
	// waiting for a slot must be taken from the queue, or its wait would
	// look like a host that is gone (the schedule-to-start timeout).
	hostOpts := base
	hostOpts.MaxConcurrentActivityExecutionSize = 1000
	host := worker.New(c, contract.HostTaskQueue(opts.TaskQueue, opts.HostID), hostOpts)
	host.RegisterActivity(agent)
	w := &Worker{c: c, attempts: agent.Attempts, shared: shared, host: host}
	if ch.Inbox() {
		w.chat = worker.New(c, contract.ChatTaskQueue(opts.TaskQueue), base)
		for name, fn := range map[string]any{
			contract.ActivityChatUpdates: ch.ChatUpdates, contract.ActivityChatAnswer: ch.ChatAnswer,
			contract.ActivityChatReply: ch.ChatReply, contract.ActivityChatSessions: ch.ChatSessions,
			contract.ActivityChatSlackReplies: ch.ChatSlackReplies,
			contract.ActivityChatRun:          ch.ChatRun,
		} {
			w.chat.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
		}
	}
	return w
}

// Start starts polling both queues.
func (w *Worker) Start() error {
	w.failOrphans(context.Background())
	if err := w.host.Start(); err != nil {
		return fmt.Errorf("start the host's worker: %w", err)
	}
	if err := w.shared.Start(); err != nil {
		w.host.Stop()
		return fmt.Errorf("start the shared worker: %w", err)
	}
	if w.chat != nil {
		if err := w.chat.Start(); err != nil {
			w.host.Stop()
			w.shared.Stop()
			return fmt.Errorf("start the chat worker: %w", err)
		}
	}
	return nil
}

// Stop stops both, letting running iterations end (WorkerStopTimeout).
func (w *Worker) Stop() {
	var wg sync.WaitGroup
	all := []worker.Worker{w.shared, w.host}
	if w.chat != nil {
		all = append(all, w.chat)
	}
	for _, x := range all {
		wg.Add(1)
		go func() { defer wg.Done(); x.Stop() }()
	}
	wg.Wait()
}

// Run starts the worker and stops it when interrupt delivers.
func (w *Worker) Run(interrupt <-chan any) error {
	if err := w.Start(); err != nil {
		return err
	}
	<-interrupt
	w.Stop()
	return nil
}

// SessionsRefresh is how often a worker's metrics read the states of its
// host's sessions from visibility, at most.
const SessionsRefresh = 15 * time.Second

// WorkerStopTimeout is how long a stopping worker lets its running
// iterations finish before it cancels them, which kills their agents.
const WorkerStopTimeout = 15 * time.Second

// NewGitHub is the GitHub client of a worker configured by cfg, with the
// token of github.token-file when it is set, as the GitHub App's
// installation when github.app-* are.
func NewGitHub(cfg config.Config) (*github.Activities, error) {
	iv := cfg.GitHub.WriteInterval
	if iv == 0 {
		iv = -1 // github.write-interval 0 spaces nothing
	}
	token, err := cfg.GitHub.FileToken()
	if err != nil {
		return nil, err
	}
	app, err := newApp(cfg)
	if err != nil {
		return nil, err
	}
	return &github.Activities{WriteInterval: iv, FileToken: token, App: app}, nil
}

// NewAgent is the agent runner of a worker configured by cfg. The token
// of github.token-file is a secret of its, redacted and refused in a push
// like the variable's, named github.token-file; so is the GitHub App's
// private key. NewWorker gives it the app (NewGitHub's).
func NewAgent(cfg config.Config) *activities.Agent {
	a := &activities.Agent{Env: cfg.Agent.Env, Hidden: cfg.Hidden(), Secrets: workerSecrets(cfg)}
	// A token file that cannot be read adds nothing: NewGitHub reports it.
	if token, err := cfg.GitHub.FileToken(); err == nil && token != "" {
		a.GitHubFileToken = token
		a.Secrets = append(a.Secrets, github.TokenFileSource+"="+token)
	}
	a.Secrets = append(a.Secrets, appKeySecrets(cfg)...)
	// The bots' tokens and the Slack webhook's URL, whatever their
	// variables are called.
	a.Secrets = append(a.Secrets, cfg.NotifySettings(os.Getenv).Secrets()...)
	return a
}

// hostAgent makes agent the runner of iterations of opts's host: its
// slots, its records, and the signal that tells a session its iteration
// waits for a slot.
func hostAgent(c client.Client, opts WorkerOptions, agent *activities.Agent) {
	agent.Host = opts.HostID
	agent.Slots = activities.NewSlots(opts.MaxAgents)
	agent.Attempts = attemptsIn(opts.AttemptsDir)
	agent.Records = opts.RecordsDir
	agent.ClonesDir = opts.ClonesDir
	agent.OnSlot = func(ctx context.Context, ev activities.SlotEvent) {
		err := c.SignalWorkflow(ctx, ev.WorkflowID, ev.RunID, contract.SignalAgentSlot, contract.AgentSlot{
			Iteration: ev.Iteration, Waiting: ev.Waiting, Running: ev.Running, Max: ev.Max,
		})
		if err != nil {
			activity.GetLogger(ctx).Warn("tell the session about its agent slot", "error", err)
		}
	}
}

// agentLimits are the session's agent.limits; the defaults travel as
// zero, which the sandbox reads as its defaults.
func agentLimits(l config.AgentLimits) contract.AgentLimits {
	memory, tmp := l.Bytes()
	out := contract.AgentLimits{Processes: l.Processes, MemoryBytes: memory, TmpBytes: tmp}
	if out.Processes == sandbox.DefaultProcesses {
		out.Processes = 0
	}
	if out.MemoryBytes == sandbox.DefaultMemory {
		out.MemoryBytes = 0
	}
	if out.TmpBytes == sandbox.DefaultTmp {
		out.TmpBytes = 0
	}
	return out
}

// workerSecrets are the worker's secrets that its variables' names may
// not tell: the codec key, from its file or variable, the GitHub token,
// whatever github.token-env calls it, and the webhooks' secret, whatever
// github.webhook-secret-env calls it. A key file that cannot be
// read adds nothing here: LoadCodec reports it.
func workerSecrets(cfg config.Config) []string {
	var secrets []string
	if f := cfg.Codec.KeyFile; f != "" {
		if data, err := os.ReadFile(f); err == nil {
			secrets = append(secrets, "codec.key-file="+strings.TrimSpace(string(data)))
		}
	} else if env := cfg.Codec.KeyEnv; env != "" {
		secrets = append(secrets, env+"="+strings.TrimSpace(os.Getenv(env)))
	}
	if name, token := github.Token(os.Getenv, cfg.GitHub.TokenEnv); token != "" {
		secrets = append(secrets, name+"="+token)
	}
	if env := cfg.GitHub.WebhookSecretEnv; env != "" && os.Getenv(env) != "" {
		secrets = append(secrets, env+"="+os.Getenv(env))
	}
	return secrets
}

// SandboxNotice is what a worker says at its start about containing
// agents: which sandbox it uses, or that agents of sessions with
// agent.sandbox auto run uncontained, why, and how to change that.
func SandboxNotice() string {
	box, err := sandbox.Find()
	switch {
	case err != nil:
		return fmt.Sprintf("Agents run UNCONTAINED (agent.sandbox auto; sessions with agent.sandbox required fail): %v. To contain them: %s.", err, sandbox.InstallHint)
	case box.ProxyProblem(sandbox.NetInternet) != nil:
		return fmt.Sprintf("Agents run in %s, but socat is not on PATH (and this worker may not enter a sandbox's network namespace, as root could): sessions on agent.network internet or allow-list run uncontained (auto) or fail (required). Install socat.", box.Name())
	}
	return fmt.Sprintf("Agents run contained: %s, network through the worker's egress proxy (bridge: %s; see agent.sandbox and agent.network); limits: %s.",
		box.Name(), box.Bridge(), box.Enforcement())
}

// LoadCodec returns the payload codec cfg configures, or nil when
// encryption is off.
func LoadCodec(cfg config.Config) (*codec.Codec, error) {
	return codec.Load(cfg.Codec.KeyFile, cfg.Codec.KeyEnv)
}

// NewWorkflowWorker creates a worker that runs the workflows' code but
// no activities: it answers queries and advances workflows, and leaves
// iterations to workers that can run agents.
func NewWorkflowWorker(c client.Client, taskQueue string) worker.Worker {
	// Without LocalActivityWorkerOnly it would poll for iterations too and
	// fail each one it took as an unregistered activity.
	w := worker.New(c, taskQueue, worker.Options{LocalActivityWorkerOnly: true})
	workflows.Register(w)
	return w
}

// SessionInput builds the input of a session on workspace from cfg.
func SessionInput(cfg config.Config, workspace string) (contract.SessionInput, error) {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return contract.SessionInput{}, fmt.Errorf("workspace %s: %w", workspace, err)
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	prices, err := cfg.Agent.PriceTable()
	if err != nil {
		return contract.SessionInput{}, fmt.Errorf("agent.prices: %w", err)
	}
	executor := contract.AgentSettings{
		Backend:          backendOf(cfg.Agent.Backend),
		Command:          cfg.Agent.Command,
		Prices:           prices,
		Model:            cfg.Agent.Model,
		MaxTurns:         cfg.Agent.MaxTurns,
		ExtraArgs:        cfg.Agent.Args,
		Timeout:          cfg.Limits.IterationTimeout,
		ResetInterrupted: cfg.Agent.ResetInterrupted,
		Sandbox: contract.SandboxSettings{
			Mode:         cfg.Agent.Sandbox,
			Network:      cfg.Agent.Network,
			NetworkAllow: cfg.Agent.NetworkAllow,
			ReadOnly:     cfg.Agent.SandboxRO,
			ReadWrite:    cfg.Agent.SandboxRW,
			Limits:       agentLimits(cfg.Agent.Limits),
		},
	}
	return contract.SessionInput{
		Roles:       rolesOf(cfg, executor),
		Fallback:    fallbackOf(cfg, executor),
		Workspace:   abs,
		Host:        cfg.Worker.HostID,
		HostTimeout: cfg.Worker.HostTimeout,
		Agent:       executor,
		Task: contract.TaskSettings{
			Mode:              cfg.Task.Mode,
			CompletionPromise: cfg.Task.CompletionPromise,
			CheckCommand:      cfg.Task.CheckCommand,
			InstructionsFile:  cfg.Task.InstructionsFile,
		},
		Git: contract.GitSettings{
			AutoCommit:     cfg.Git.AutoCommit,
			AllowDirty:     cfg.Git.AllowDirty,
			ProtectedPaths: cfg.Git.ProtectedPaths,
		},
		Checkpoints: contract.CheckpointSettings{
			Every:          cfg.Checkpoint.Every,
			BeforeComplete: cfg.Checkpoint.BeforeComplete,
			Timeout:        cfg.Checkpoint.Timeout,
			OnTimeout:      cfg.Checkpoint.OnTimeout,
		},
		Limits: contract.Limits{
			MaxIterations:          cfg.Limits.MaxIterations,
			MaxRuntime:             cfg.Limits.MaxRuntime,
			MaxCostUSD:             cfg.Limits.MaxCostUSD,
			MaxConsecutiveFailures: cfg.Limits.MaxConsecutiveFailures,
			MaxNoProgress:          cfg.Limits.MaxNoProgress,
			IterationTimeout:       cfg.Limits.IterationTimeout,
			HeartbeatTimeout:       cfg.Limits.HeartbeatTimeout,
			IterationsPerRun:       cfg.Limits.IterationsPerRun,
			MaxTaskFileRepairs:     cfg.Limits.MaxTaskFileRepairs,
			OnLimit:                cfg.Limits.OnLimit,
		},
	}, nil
}

// ErrNoServer means no Temporal server answered, no dev server runs on the
// state directory and --dev was not given.
var ErrNoServer = errors.New("no Temporal server answers")

// ServeCodec serves cdc's codec server (for the Temporal UI) on addr
// until stop is called.
func ServeCodec(addr string, cdc *codec.Codec) (stop func(), err error) {
	if cdc == nil {
		return nil, errors.New("codec.server is set but encryption is off: set codec.key-file or codec.key-env")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("codec.server: %w", err)
	}
	srv := &http.Server{Handler: cdc.Handler("*"), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}

// backendOf is agent.backend as a session records it: empty for Claude
// Code, the default, so that sessions started before there were backends
// and those started since read alike.
func backendOf(name string) string {
	if name == activities.DefaultBackend {
		return ""
	}
	return name
}

// rolesOf is the session's roles besides the executor: nil when the
// configuration has none but the defaults, so that such a session reads
// as sessions did before roles.
func rolesOf(cfg config.Config, executor contract.AgentSettings) *contract.Roles {
	planner := cfg.Roles.Planner
	custom := planner.Backend != "" || planner.Model != "" || len(planner.Command) > 0 || planner.Instructions != ""
	if !cfg.Roles.Reviewer.On() && !custom {
		return nil
	}
	roles := &contract.Roles{}
	if cfg.Roles.Reviewer.On() {
		roles.Reviewer = roleAgent(cfg, executor, cfg.Roles.Reviewer.Agent())
		roles.ReviewEvery = cfg.Roles.Reviewer.Every
	}
	if custom {
		roles.Planner = roleAgent(cfg, executor, planner)
	}
	return roles
}

// fallbackOf is agent.fallback's agents, nil without any.
func fallbackOf(cfg config.Config, executor contract.AgentSettings) *contract.FallbackSettings {
	if len(cfg.Agent.Fallback) == 0 {
		return nil
	}
	fb := &contract.FallbackSettings{After: cfg.Agent.FallbackAfter}
	for _, b := range cfg.Agent.Fallback {
		fb.Agents = append(fb.Agents, roleAgent(cfg, executor, config.RoleConfig{Backend: b}).Agent)
	}
	return fb
}

// roleAgent is the agent of a role configured by r.
func roleAgent(cfg config.Config, executor contract.AgentSettings, r config.RoleConfig) *contract.RoleAgent {
	backend, command, model := cfg.Agent.RoleAgent(r)
	a := executor
	a.Backend, a.Command, a.Model = backendOf(backend), command, model
	if backend != cfg.Agent.Backend {
		// The executor's turns and arguments are for its own CLI.
		a.MaxTurns, a.ExtraArgs = 0, nil
	}
	return &contract.RoleAgent{Agent: a, Instructions: r.Instructions}
}
