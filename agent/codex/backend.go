// Package codex is the backend of OpenAI's Codex CLI (@openai/codex): its
// non-interactive command line, the parser of its JSONL output and the
// classifier of how a run ended.
//
// One run is
//
//	codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check [--model M] [extra args] [resume THREAD] -
//
// with the prompt on standard input ("-"). The output is one JSON object
// per line: thread.started (the thread id, which `codex exec resume`
// takes), turn.started, item.started, item.updated and item.completed
// for the items of the turn (agent_message, reasoning,
// command_execution, file_change, mcp_tool_call, web_search, todo_list,
// error, ...), then turn.completed with the token usage or turn.failed
// with an error; error events report errors along the way, retries
// included. The CLI reports tokens but no cost, and does not name its
// model; the parser prices the tokens with agent.Options.Prices for the
// model asked for.
//
// Facts of Codex CLI 0.169.0 the backend relies on:
//   - It exits 0 when the turn completed, 1 when it failed (an API error,
//     a rate or usage limit, a missing API key, no session to resume),
//     and 2 for a command line it rejects (printed by its argument
//     parser on stderr: "error: unexpected argument '--x' found").
//   - It retries failed requests itself: by default a request up to 4
//     more times with a short backoff, and the whole stream up to 5 more
//     times, each time printing an error event "Reconnecting... N/5
//     (...)"; HTTP 429 is retried after the server's retry-after, HTTP
//     401 too; a usage limit or an exhausted quota is not. The provider's
//     request_max_retries and stream_max_retries bound that. A server it
//     cannot connect to at all is retried for ever ("Reconnecting...
//     waiting for network"): only the iteration's timeout ends such a run.
//   - The thread id comes first, before any request, and the session
//     (CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-THREAD.jsonl) is written
//     as the turn goes, so a run killed mid-turn can be resumed with what
//     it had done; a tool call cut off is sent to the model as
//     "aborted". Resuming needs the same CODEX_HOME.
//   - bin/codex is a node script that starts the native binary as its
//     child (node without process.execve, such as 20.x): a SIGKILL of the
//     node process alone leaves the binary running. The commands it runs
//     for the model get a session of their own (setsid), so even a kill
//     of the process group leaves them behind.
package codex

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/durable-ralph/ralph/agent"
)

// DefaultModel is the model Codex 0.169 asks for when neither --model nor
// its config.toml names one; the parser assumes it when Options.Model is
// empty and the output names no model.
const DefaultModel = "gpt-6.1-sol"

// Backend runs the Codex CLI non-interactively.
type Backend struct{}

// Name is "codex".
func (Backend) Name() string { return "codex" }

// StreamSaysFinished: the stream ends in its final event (agent.Finisher).
func (Backend) StreamSaysFinished() bool { return true }

// Install says how to install the Codex CLI (its npm package).
func (Backend) Install() string { return "Codex: npm install -g @openai/codex" }

// Args is the command line of one run: codex exec with JSONL output
// (--json), every command run without asking and without a sandbox, the
// prompt read from stdin ("-"), and for a resumed run the subcommand
// resume with the thread id to continue.
//
// --dangerously-bypass-approvals-and-sandbox is the one flag that sets
// both the approval policy (never ask) and the sandbox (none) and that
// both `codex exec` and `codex exec resume` take: exec has no approval
// flag (-a/--ask-for-approval is the interactive CLI's), and resume has
// no --sandbox. A resumed run does not keep the sandbox of the run it
// continues: without the flag it runs read-only. Ralph runs the agent in
// a worktree of its own, which is the sandbox.
//
// --skip-git-repo-check lets Codex run in a directory that is not a git
// repository (or one it does not trust).
//
// The flags go before resume: `codex exec [flags] resume THREAD -` takes
// every flag of exec (--model, --sandbox, -c key=value, ...) and applies
// it to the resumed run, while after resume only the flags of resume are
// accepted. So o.ExtraArgs may hold any flag of codex exec. o.MaxTurns is
// not passed on: Codex has no bound on turns.
func (Backend) Args(o agent.Options, resume string) []string {
	args := []string{"exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	args = append(args, o.ExtraArgs...)
	if resume != "" {
		args = append(args, "resume", resume)
	}
	return append(args, "-")
}

// ResumedUsageIsSessionTotal is true: turn.completed reports the
// thread's running total, the runs a resume continues included.
func (Backend) ResumedUsageIsSessionTotal() bool { return true }

// Env is nil: Codex needs nothing beyond the environment of the worker
// (its API key, or the ChatGPT sign-in under CODEX_HOME).
func (Backend) Env(agent.Options) []string { return nil }

// State is $CODEX_HOME, else ~/.codex: the CLI's config.toml, login and
// the threads a resumed run continues.
func (Backend) State(home string, getenv func(string) string) (dirs, files []string) {
	if d := getenv("CODEX_HOME"); filepath.IsAbs(d) {
		return []string{d}, nil
	}
	return []string{filepath.Join(home, ".codex")}, nil
}

// APIHosts are the hosts of the base_url lines of the CLI's config.toml
// (its model providers) and of $OPENAI_BASE_URL, else api.openai.com and
// chatgpt.com (a ChatGPT login).
func (b Backend) APIHosts(getenv func(string) string) []string {
	var hosts []string
	if dirs, _ := b.State(getenv("HOME"), getenv); len(dirs) > 0 {
		hosts = configHosts(filepath.Join(dirs[0], "config.toml"))
	}
	if h := agent.HostOf(getenv("OPENAI_BASE_URL")); h != "" {
		return append(hosts, h)
	}
	return append(hosts, "api.openai.com", "chatgpt.com")
}

// configHosts are the hosts of the `base_url = "…"` lines of the TOML
// file at path; none when it cannot be read.
func configHosts(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var hosts []string
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(key) != "base_url" {
			continue
		}
		if h := agent.HostOf(strings.Trim(strings.TrimSpace(value), `"'`)); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// NewParser returns a parser of the CLI's JSONL that prices tokens with
// o.Prices, or agent.DefaultPrices when o.Prices is nil, for o.Model.
func (Backend) NewParser(o agent.Options) agent.Parser {
	prices := o.Prices
	if prices == nil {
		prices = agent.DefaultPrices
	}
	return &Parser{model: o.Model, prices: prices, items: map[string]bool{}}
}
