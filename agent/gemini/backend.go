// Package gemini is the backend of the Gemini CLI (@google/gemini-cli):
// its headless command line, the parser of its stream-json output and the
// classifier of how a run ended.
//
// One run is
//
//	gemini --prompt "" --output-format stream-json --approval-mode yolo [--model M] [extra args] [--resume SESSION]
//
// with the prompt on standard input: given an empty --prompt, the CLI
// takes what it reads on stdin as the prompt. It reaches the model as
// written, except for the CLI's @ references: "@path" of an existing file
// has the file's content appended to the prompt, and an @ within a word
// gets a space before it ("someone @example.com"). The stream-json
// output is one JSON object per line: init (session_id, model), message
// (the user's prompt, then the model's text in delta chunks), tool_use,
// tool_result, error and a closing result with the run's token counts.
// The CLI reports tokens but no cost; the parser prices them with
// agent.Options.Prices.
package gemini

import (
	"path/filepath"

	"github.com/durable-ralph/ralph/agent"
)

// Backend runs the Gemini CLI headless.
type Backend struct{}

// Name is "gemini".
func (Backend) Name() string { return "gemini" }

// StreamSaysFinished: the stream ends in its final event (agent.Finisher).
func (Backend) StreamSaysFinished() bool { return true }

// Install says how to install the Gemini CLI (its npm package).
func (Backend) Install() string { return "Gemini CLI: npm install -g @google/gemini-cli" }

// Args is the command line of one run: headless (--prompt "", the prompt
// itself on stdin), stream-json output, every tool call approved
// (--approval-mode yolo), and --resume with the session id of the run to
// continue. The CLI looks the session up among those it saved for the
// working directory under ~/.gemini, so a run resumes only in the
// directory, and with the HOME, of the run it continues.
//
// o.MaxTurns is not passed on: the CLI bounds turns only by
// model.maxSessionTurns in its settings.json, and then exits with status
// 53.
func (Backend) Args(o agent.Options, resume string) []string {
	args := []string{"--prompt", "", "--output-format", "stream-json", "--approval-mode", "yolo"}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	args = append(args, o.ExtraArgs...)
	if resume != "" {
		args = append(args, "--resume", resume)
	}
	return args
}

// Env trusts the working directory and keeps the CLI in one process.
//
// Headless, the CLI refuses to run in a folder the user has not trusted:
// it prints "Gemini CLI is not running in a trusted directory" and exits
// with status 55 (after downgrading --approval-mode yolo to "default").
// GEMINI_CLI_TRUST_WORKSPACE=true trusts the folder for the run.
//
// By default the CLI relaunches itself as a child node process with a
// larger heap, and the parent ignores SIGTERM, SIGINT and SIGHUP: a
// SIGTERM to the process Ralph started (as when its worker dies) would
// leave the child running. GEMINI_CLI_NO_RELAUNCH=true runs it in the
// process Ralph started.
func (Backend) Env(agent.Options) []string {
	return []string{"GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_CLI_NO_RELAUNCH=true"}
}

// State is ~/.gemini: the CLI's settings, login and chats.
func (Backend) State(home string, _ func(string) string) (dirs, files []string) {
	return []string{filepath.Join(home, ".gemini")}, nil
}

// APIHosts is the host of $GOOGLE_GEMINI_BASE_URL, else the Gemini API's
// and Google's login hosts.
func (Backend) APIHosts(getenv func(string) string) []string {
	if h := agent.HostOf(getenv("GOOGLE_GEMINI_BASE_URL")); h != "" {
		return []string{h}
	}
	return []string{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com"}
}

// NewParser returns a parser of the CLI's stream-json that prices tokens
// with o.Prices, or agent.DefaultPrices when o.Prices is nil.
func (Backend) NewParser(o agent.Options) agent.Parser {
	return &Parser{model: o.Model, prices: o.Prices}
}
