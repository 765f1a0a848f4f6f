// Package config resolves the configuration of a Durable Ralph session from
// command-line flags, RALPH_* environment variables, a YAML config file, the
// user config file and defaults, in that order of precedence: a flag wins
// only if it is given on the command line.
//
// The config file is the one named by --config or RALPH_CONFIG, which must
// exist; otherwise ralph.yaml in the workspace, if it exists. The user
// config file is $XDG_CONFIG_HOME/durable-ralph/config.yaml, or
// ~/.config/durable-ralph/config.yaml if XDG_CONFIG_HOME is unset or
// relative; it need not exist. A key a.b-c is written in either file as
//
//	a:
//	  b-c: value
//
// and set in the environment as RALPH_A_B_C. Unknown keys in the file are
// errors, so that a typo does not silently leave a default in force.
// Durations are written with a unit, such as 90s, 30m or 1h30m.
//
// A workspace's ralph.yaml comes with the repository, which may not be the
// user's own. So it may not set the trusted keys, which decide where the
// Temporal server listens, where its state is and what the worker exposes,
// such as where the GitHub token goes: task-queue, agent.env,
// github.api-url, github.token-env, github.token-file, github.app-*,
// git.protected-paths, dev.*, codec.* and notify.*.
// Setting one there is an error;
// flags, environment variables, a file named by --config or RALPH_CONFIG and
// the user config file may set them. It may set agent.command, which
// [Config.Notices] then reports.
//
// Nor does a workspace's ralph.yaml run anything on its own say. The keys
// whose values run on this machine, agent.command, agent.args (they reach
// the agent's CLI, where flags such as --mcp-config start programs),
// task.check-command, roles.reviewer.command and roles.planner.command, are
// used from it only once the user trusted the workspace with those values
// ([TrustWorkspace], starter trust DIR): until then
// [Config.CheckWorkspaceTrusted], which the commands that start agents ask
// first, refuses with the values and the command to trust them. The trust
// is recorded in trusted-workspaces.json beside the user config file, by
// the workspace's real path and a SHA-256 of those keys and values, not of
// the file: a comment or another key may change, but a changed value is
// refused until trusted again. A value a flag or variable overrides needs
// no trust, nor does a file named by --config or RALPH_CONFIG.
//
// The following environment variables are used, each followed by its flag and
// default in parentheses:
//
//   - RALPH_CONFIG: config file to read instead of <workspace>/ralph.yaml
//     (--config).
//   - RALPH_WORKSPACE: directory of the repository the agent works in
//     (--workspace, current directory). A positional argument of the command
//     overrides it.
//   - RALPH_TASK_QUEUE: Temporal task queue of the workflow and its worker
//     (--task-queue, "ralph"). Trusted.
//   - RALPH_AGENT_BACKEND: kind of agent: claude, codex, gemini or command
//     (--backend, "claude").
//   - RALPH_AGENT_COMMAND: agent command line, split on spaces; single and
//     double quotes group words (--agent-command, the backend's CLI:
//     claude, codex or gemini; required for the command backend).
//   - RALPH_AGENT_MODEL: model the agent uses (--model, the agent's default).
//   - RALPH_AGENT_MAX_TURNS: maximum agent turns in one iteration, 0 for
//     unlimited (--max-turns, 0).
//   - RALPH_AGENT_ARGS: extra agent arguments, space separated and quoted
//     like RALPH_AGENT_COMMAND (--agent-arg, repeated once per argument;
//     none). In the file, a list or a string.
//   - RALPH_AGENT_FALLBACK: backends the executor's following iterations
//     run on, in order, when its usage limit resets later than
//     agent.fallback-after from now: claude, codex or gemini, each with its
//     own CLI and default model, space separated (--fallback, repeated;
//     none: wait for the limit to reset). They go back to agent.backend
//     when its limit has reset.
//   - RALPH_AGENT_FALLBACK_AFTER: a usage limit that resets later than this
//     from now moves the iterations to agent.fallback; one that resets
//     sooner is waited for (--fallback-after, 15m).
//   - RALPH_AGENT_PRICES: prices of models for backends whose agent reports
//     tokens but no cost, as MODEL=INPUT/CACHED/OUTPUT in US dollars per
//     million tokens, space separated (--agent-price, repeated once per
//     model; built-in prices of current OpenAI and Google models).
//   - RALPH_AGENT_ENV: extra environment for the agent beyond the built-in
//     allow-list, space separated and quoted like RALPH_AGENT_COMMAND; each
//     entry is NAME, passing the worker's variable of that name, or
//     NAME=value (--agent-env, repeated once per entry; none). Trusted.
//   - RALPH_AGENT_RESET_INTERRUPTED: when an iteration's worker died and its
//     agent session cannot be resumed, reset the workspace to the
//     iteration's start commit instead of keeping (and describing) the
//     partial changes (--reset-interrupted, false).
//   - RALPH_AGENT_SANDBOX: containment of agent runs: auto, bubblewrap
//     when the worker has it and else uncontained with a warning; required,
//     an agent run that cannot be contained fails; or off (--sandbox, auto;
//     required for starter queue). Trusted.
//   - RALPH_AGENT_NETWORK: network of a contained agent run: internet,
//     public hosts and agent.network-allow through the worker's proxy, never
//     the host's loopback or private addresses; allow-list, the backend's
//     model API and agent.network-allow only; none; or open, the host's
//     network (--network, "internet"). Trusted.
//   - RALPH_AGENT_NETWORK_ALLOW: hosts a contained agent may reach besides
//     the backend's model API, as host, host:port or *.domain, space
//     separated (--network-allow, repeated; none). Trusted.
//   - RALPH_AGENT_SANDBOX_RO: paths a contained agent may read, such as a
//     toolchain cache, space separated; a leading ~ is expanded
//     (--sandbox-ro, repeated; none). Trusted.
//   - RALPH_AGENT_SANDBOX_RW: paths a contained agent may read and write,
//     space separated; a leading ~ is expanded (--sandbox-rw, repeated;
//     none). Trusted.
//   - RALPH_AGENT_LIMITS_PROCESSES: most processes and threads a
//     contained agent run has at once (--limit-processes, 2048). Trusted.
//   - RALPH_AGENT_LIMITS_MEMORY: most memory a contained agent run's
//     processes use together, such as 4GiB (--limit-memory, 4GiB).
//     Trusted.
//   - RALPH_AGENT_LIMITS_TMP: size of each file system in memory of a
//     contained agent run: /tmp, its home directory, /dev/shm
//     (--limit-tmp, 1GiB). Trusted.
//   - RALPH_TASK_MODE: where the task comes from: prd, progress or prompt
//     (--mode, detected from the workspace).
//   - RALPH_TASK_COMPLETION_PROMISE: text the agent prints when all work is
//     done (--completion-promise, the mode's default).
//   - RALPH_TASK_CHECK_COMMAND: shell command, run with sh -c in the
//     workspace, that must exit 0 for the agent's claim that all work is
//     done to count (--check-command, none: no check).
//   - RALPH_TASK_INSTRUCTIONS_FILE: file of the workspace, such as RALPH.md,
//     whose text every prompt carries as the project's instructions
//     (--instructions-file, none).
//   - RALPH_LIMITS_MAX_ITERATIONS: stop after this many iterations
//     (--max-iterations, 100).
//   - RALPH_LIMITS_MAX_RUNTIME: stop after this much wall-clock time, 0 for
//     no limit (--max-runtime, 4h).
//   - RALPH_LIMITS_MAX_COST_USD: stop once the agent has spent this many US
//     dollars, 0 for no limit (--max-cost, 50).
//   - RALPH_LIMITS_MAX_CONSECUTIVE_FAILURES: stop after this many failed
//     iterations in a row (--max-consecutive-failures, 3).
//   - RALPH_LIMITS_MAX_NO_PROGRESS: stop after this many iterations in a row
//     without progress (--max-no-progress, 3).
//   - RALPH_LIMITS_MAX_TASK_FILE_REPAIRS: iterations in a row that may try
//     to repair a task file the agent made unreadable before the session
//     ends as task_file_invalid (--max-task-file-repairs, 2).
//   - RALPH_LIMITS_ITERATION_TIMEOUT: time limit of one agent iteration;
//     longer than the heartbeat timeout (--iteration-timeout, 30m).
//   - RALPH_LIMITS_HEARTBEAT_TIMEOUT: Temporal heartbeat timeout of a running
//     agent, at least 1s (--heartbeat-timeout, 10s).
//   - RALPH_LIMITS_ITERATIONS_PER_RUN: continue the workflow as new after
//     this many iterations (--iterations-per-run, 25).
//   - RALPH_LIMITS_ON_LIMIT: what a session does at max cost, iterations
//     or runtime: end, or ask a person to raise the limit or stop and
//     wait (--on-limit, end for run, ask for the queue's issues).
//   - RALPH_GIT_AUTO_COMMIT: commit the agent's changes after each iteration
//     (--auto-commit, true).
//   - RALPH_GIT_ALLOW_DIRTY: start even if the workspace has uncommitted
//     changes (--allow-dirty, false).
//   - RALPH_GIT_PROTECTED_PATHS: paths the agent may not change, as
//     patterns where ** is any number of directories and * any part of a
//     name, space separated; an iteration that changes one is not
//     committed, and its work is kept as .ralph/protected/iteration-N.patch.
//     An empty pattern, or [] in a file, protects nothing
//     (--protected-path, repeated; ".github/workflows/**"). Trusted, so
//     that a repository cannot lift its own protection.
//   - RALPH_CHECKPOINT_EVERY: iterations between checkpoints, where the
//     session waits for a human to review the work, 0 for no checkpoints
//     (--checkpoint-every, 0).
//   - RALPH_CHECKPOINT_BEFORE_COMPLETE: a human must confirm before a session
//     ends complete (--confirm-complete, false).
//   - RALPH_CHECKPOINT_TIMEOUT: how long a checkpoint waits for an answer, 0
//     for as long as it takes (--checkpoint-timeout, 0s).
//   - RALPH_CHECKPOINT_ON_TIMEOUT: what an unanswered checkpoint does:
//     continue, telling the agent nobody answered, or stop, ending the
//     session as checkpoint_timeout (--checkpoint-on-timeout, "continue").
//   - RALPH_ROLES_REVIEWER_ENABLED: after every completion claim the task
//     file accepts, run a reviewer that checks the acceptance criteria
//     without changing code (--review, false).
//   - RALPH_ROLES_REVIEWER_EVERY: also run the reviewer after every N
//     executor iterations (--review-every, 0: only after completion claims).
//   - RALPH_ROLES_REVIEWER_BACKEND: backend of the reviewer
//     (--reviewer-backend, agent.backend).
//   - RALPH_ROLES_REVIEWER_MODEL: model of the reviewer (--reviewer-model,
//     agent.model when its backend is agent.backend, else the backend's
//     default).
//   - RALPH_ROLES_REVIEWER_COMMAND: command line of the reviewer
//     (--reviewer-command, agent.command when its backend is agent.backend,
//     else the backend's CLI).
//   - RALPH_ROLES_REVIEWER_INSTRUCTIONS: instructions the reviewer gets besides
//     Ralph's (--reviewer-instructions, none).
//   - RALPH_ROLES_PLANNER_BACKEND: backend of the planner of starter plan
//     (--planner-backend, agent.backend).
//   - RALPH_ROLES_PLANNER_MODEL: model of the planner (--planner-model,
//     agent.model when its backend is agent.backend, else the backend's
//     default).
//   - RALPH_ROLES_PLANNER_COMMAND: command line of the planner
//     (--planner-command, agent.command when its backend is agent.backend,
//     else the backend's CLI).
//   - RALPH_ROLES_PLANNER_INSTRUCTIONS: instructions the planner gets besides
//     Ralph's (--planner-instructions, none).
//   - RALPH_GITHUB_REPO: GitHub repository as owner/name, each of letters,
//     digits, -, _ and . (--repo, taken from the URL of the workspace's
//     origin remote).
//   - RALPH_GITHUB_API_URL: base URL of the GitHub REST API, absolute http
//     or https; a missing trailing / is added (--github-api-url,
//     "https://api.github.com/"). The token is sent there. Trusted.
//   - RALPH_GITHUB_TOKEN_ENV: name of the environment variable holding the
//     GitHub token (--github-token-env, "GITHUB_TOKEN", which falls back to
//     GH_TOKEN when empty). Trusted.
//   - RALPH_GITHUB_TOKEN_FILE: file holding the GitHub token, read by the
//     worker when it starts, instead of the variable of github.token-env,
//     which stays readable in the shell that exported it
//     (/proc/<pid>/environ). It must be readable by its owner alone (chmod
//     600 FILE) and not empty; surrounding white space, such as the
//     trailing newline, is not part of the token. When both are set, the
//     file wins; a leading ~ is expanded (--github-token-file, none).
//     Trusted.
//   - RALPH_GITHUB_APP_ID: ID of the GitHub App the worker authenticates
//     as instead of with a token, with github.app-installation-id and
//     github.app-private-key-file: all three or none. The worker then uses
//     the installation's tokens, which it gets and renews as they expire,
//     for the API and for git; when a token is configured too, the app
//     wins (--github-app-id, 0: none). Trusted.
//   - RALPH_GITHUB_APP_INSTALLATION_ID: ID of the GitHub App's
//     installation on the repository's owner, the number at the end of
//     the installation's settings URL (--github-app-installation-id, 0:
//     none). Trusted.
//   - RALPH_GITHUB_APP_PRIVATE_KEY_FILE: file holding the GitHub App's
//     private key, the PEM file its settings page generates, read by the
//     worker when it starts. It must be readable by its owner alone (chmod
//     600 FILE) and hold an RSA private key; the key's text is redacted
//     like a token; a leading ~ is expanded
//     (--github-app-private-key-file, none). Trusted.
//   - RALPH_GITHUB_WRITE_INTERVAL: least time between two GitHub write
//     requests of one worker, 0 for no spacing (--github-write-interval, 1s).
//   - RALPH_GITHUB_WEBHOOK_LISTEN: host:port where the worker serves GitHub
//     webhooks at POST /github/webhook, such as 127.0.0.1:8090 behind a
//     reverse proxy or a tunnel: a delivery wakes the queue, pull request
//     follower or session it concerns at once, polling stays on
//     (--github-webhook-listen, none: off). Trusted.
//   - RALPH_GITHUB_WEBHOOK_SECRET_ENV: name of the environment variable
//     holding the webhooks' secret, which every delivery's signature is
//     checked with; the worker does not serve webhooks while it is empty
//     (--github-webhook-secret-env, "RALPH_GITHUB_WEBHOOK_SECRET"). Trusted.
//   - RALPH_QUEUE_LABEL: label of the issues the queue works on; one label,
//     without commas (--label, "ralph-ready").
//   - RALPH_QUEUE_POLL_INTERVAL: time between two looks for labelled
//     issues, at least 1s (--poll-interval, 5m).
//   - RALPH_QUEUE_MAX_ISSUES: stop the queue after this many issues, 0 for
//     no limit (--max-issues, 0).
//   - RALPH_QUEUE_PARALLEL: how many issues are worked on at once, each in
//     its own work tree and session, from 1 to 16 (--parallel, 1).
//   - RALPH_QUEUE_MAX_COST_USD: stop the queue once its sessions have spent
//     this many US dollars together, 0 for no limit (--queue-max-cost, 0).
//   - RALPH_QUEUE_MAX_COST_PER_DAY: take no new issue for the rest of the
//     UTC day once that day's issues and rounds have cost this many US
//     dollars, 0 for no limit (--queue-max-cost-per-day, 0).
//   - RALPH_QUEUE_BASE_BRANCH: branch the pull requests are based on
//     (--base-branch, the repository's default branch).
//   - RALPH_QUEUE_DRAFT: open the pull requests as drafts (--draft, false).
//   - RALPH_QUEUE_FOLLOW: follow each pull request after it is opened until
//     it is merged or closed: fix failing checks, answer reviews, bring a
//     moved base in, merge with queue.auto-merge (--follow-pulls, true).
//   - RALPH_QUEUE_MAX_FIX_ROUNDS: rounds that fix failing checks of one
//     pull request, and apart rounds that bring a moved base in
//     (--max-fix-rounds, 3).
//   - RALPH_QUEUE_CHECKS_TIMEOUT: how long the checks of a pull request's
//     head may take, 0 for no limit (--checks-timeout, 2h).
//   - RALPH_QUEUE_MAX_REVIEW_ROUNDS: rounds that answer reviews of one pull
//     request (--max-review-rounds, 5).
//   - RALPH_QUEUE_TRUSTED_BOTS: bot logins whose review comments reach the
//     agent, space separated (--trusted-bot, repeated; none).
//   - RALPH_QUEUE_ADOPT_PRS: a comment "@<bot> <instruction>" by someone
//     with write access on a pull request Ralph did not open runs one
//     round on its branch (--adopt-prs, false).
//   - RALPH_QUEUE_AUTO_MERGE: merge a pull request once its checks are
//     green and GitHub says it can be merged (--auto-merge, false).
//   - RALPH_QUEUE_MERGE_METHOD: squash, merge or rebase (--merge-method,
//     "squash").
//   - RALPH_QUEUE_UPDATE_STRATEGY: how a conflicting pull request brings its
//     moved base in: merge or rebase (--update-strategy, "merge").
//   - RALPH_DEV_ENABLED: use the Temporal dev server of the state
//     directory, starting it in the background when none runs; without it
//     the commands still find a running one (--dev, false).
//   - RALPH_DEV_STATE_DIR: directory of the dev server's database; a leading
//     ~ is expanded (--state-dir, $XDG_STATE_HOME/durable-ralph or else
//     ~/.local/state/durable-ralph).
//   - RALPH_DEV_IP: IP address the dev server listens on (--dev-ip,
//     127.0.0.1).
//   - RALPH_DEV_PORT: dev server frontend (gRPC) port (--dev-port, 7233).
//   - RALPH_DEV_UI_PORT: dev server Web UI port, 0 for no UI (--dev-ui-port,
//     8233).
//   - RALPH_DEV_NAMESPACE: Temporal namespace, created by the dev server
//     (--namespace, "default").
//   - RALPH_CODEC_KEY_FILE: file holding a base64-encoded 32-byte AES-256
//     key (such as the output of openssl rand -base64 32) that encrypts
//     everything sessions store in Temporal; a leading ~ is expanded
//     (--codec-key-file, none: no encryption).
//   - RALPH_CODEC_KEY_ENV: name of the environment variable holding that
//     key, instead of a file (--codec-key-env, none).
//   - RALPH_CODEC_SERVER: host:port where the worker serves a Temporal codec
//     server (HTTP /encode and /decode), so that the Temporal UI can show
//     decrypted payloads (--codec-server, none: off).
//   - RALPH_WORKER_HOST_ID: stable ID of this machine; its worker serves the
//     task queue <task-queue>@<host-id> for the sessions of its workspaces,
//     and it is part of their workflow IDs (--host-id, the hostname).
//   - RALPH_WORKER_HOST_TIMEOUT: how long a session's work may wait for a
//     worker on its workspace's host before the session shows host_offline
//     and waits on (--host-timeout, 2m).
//   - RALPH_WORKER_MAX_AGENTS: most agent processes one worker runs at once
//     (--max-agents, 4).
//   - RALPH_WORKER_METRICS_ADDR: host:port of the worker's Prometheus
//     metrics at /metrics (--metrics-addr, none: off).
//   - RALPH_NOTIFY_EVENTS: the events that reach people over the notify
//     channels, space separated: question, plan, ended, failed, limit,
//     pr, host_offline and budget; at least one (--notify-event,
//     repeated; all).
//   - RALPH_NOTIFY_MAX_AGE: how long a notification that a channel fails
//     to take is retried before that channel is given up on it, as
//     status shows (--notify-max-age, 24h).
//   - RALPH_NOTIFY_UI_URL: base URL of the Temporal UI that messages link
//     each session to (--notify-ui-url, the dev server's UI:
//     http://<dev.ip>:<dev.ui-port>).
//   - RALPH_NOTIFY_TELEGRAM_TOKEN_ENV: name of the environment variable
//     holding the Telegram bot's token; Telegram is on when it is set and
//     notify.telegram.chat-ids is not empty (--telegram-token-env,
//     "RALPH_TELEGRAM_TOKEN").
//   - RALPH_NOTIFY_TELEGRAM_CHAT_IDS: IDs of the Telegram chats that
//     receive the messages and may answer, space separated
//     (--telegram-chat-id, repeated; none).
//   - RALPH_NOTIFY_TELEGRAM_API_URL: base URL of the Telegram Bot API,
//     where the token is sent (--telegram-api-url,
//     "https://api.telegram.org").
//   - RALPH_NOTIFY_SLACK_WEBHOOK_URL_ENV: name of the environment variable
//     holding the URL of a Slack incoming webhook (--slack-webhook-url-env,
//     "RALPH_SLACK_WEBHOOK").
//   - RALPH_NOTIFY_SLACK_BOT_TOKEN_ENV: name of the environment variable
//     holding a Slack bot token, which posts in notify.slack.channel
//     instead of the webhook and reads answers in the messages' threads
//     (--slack-bot-token-env, "RALPH_SLACK_BOT_TOKEN").
//   - RALPH_NOTIFY_SLACK_CHANNEL: Slack channel the bot posts in, such as
//     #ralph (--slack-channel, none).
//   - RALPH_NOTIFY_SLACK_API_URL: base URL of Slack's Web API, where the
//     bot token is sent (--slack-api-url, "https://slack.com/api/").
//   - RALPH_NOTIFY_SLACK_COMMANDS_LISTEN: host:port where the worker
//     takes the Slack app's slash command /run at POST /slack/commands
//     (--slack-commands-listen, none: off).
//   - RALPH_NOTIFY_SLACK_SIGNING_SECRET_ENV: name of the environment
//     variable holding the Slack app's signing secret, which signs its
//     slash commands (--slack-signing-secret-env,
//     "RALPH_SLACK_SIGNING_SECRET").
//   - RALPH_NOTIFY_WORKSPACES: the workspaces /run ALIAS IDEA may plan
//     and run from an allowed chat, as ALIAS=DIR, space separated
//     (--chat-workspace, repeated; none).
//   - RALPH_NOTIFY_WEBHOOK_URL: URL that receives each notification as a
//     JSON POST (--notify-webhook-url, none: off).
//   - RALPH_NOTIFY_WEBHOOK_SECRET_ENV: name of the environment variable
//     holding the secret that signs each POST, X-Ralph-Signature-256:
//     sha256=HMAC of the body; without it they are not signed
//     (--notify-webhook-secret-env, "RALPH_NOTIFY_SECRET").
//
// The dev.*, codec.*, notify.* and worker.* settings except
// worker.host-timeout are trusted too.
//
// Booleans are true or false (also 1 or 0). An empty environment variable is
// treated as unset. Variables named after a group of settings, such as
// RALPH_DEV, are errors: they would hide every RALPH_DEV_* setting.
//
// An example ralph.yaml:
//
//	agent:
//	  command: claude --dangerously-skip-permissions
//	  model: opus
//	limits:
//	  max-iterations: 50
//	  max-runtime: 2h
//	  max-cost-usd: 20
//	git:
//	  allow-dirty: true
//	checkpoint:
//	  every: 10
//	  timeout: 1h
//
// [Keys] returns the same table for --help and docs/configuration.md. Package config is
// the only user of viper in the project.
package config
