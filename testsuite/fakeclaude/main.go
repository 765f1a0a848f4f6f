// Command fakeclaude stands in for the claude binary of Claude Code 2.1.329
// in tests, and for users who try Durable Ralph without a model. It speaks
// Claude Code's command line and its stream-json output: the same flags,
// the same error texts, the same event shapes and field names, ids that
// look like the real ones (session UUIDs, msg_..., toolu_...). It edits
// files in its working directory, the workspace, as a scripted agent would.
//
// # Command line
//
//	fakeclaude -p --output-format stream-json --verbose --dangerously-skip-permissions [prompt] < prompt
//
// The prompt is the first positional argument or, without one, standard
// input. Print mode (-p, --print) is the only mode. --output-format takes
// text (the default: the final text), json (the result event alone) or
// stream-json, which like the real CLI requires --verbose. --model,
// --max-turns, --resume, --session-id, --append-system-prompt,
// --allowedTools and the other flags of the real CLI are accepted; unknown
// flags fail as they do there. --version prints "2.1.329 (Claude Code)".
// --max-turns N ends a run that needs more than N assistant turns with an
// error_max_turns result; --resume takes only a session id this fake agent
// started (with the same state directory).
//
// # Scenarios
//
// FAKE_CLAUDE_SCENARIO names a JSON file with the steps to play:
//
//	{"steps": [{"auto": true, "sleep_ms": 500}, {"garbage": true}], "repeat": "last"}
//
// (a bare list of steps is accepted too). Invocation k, counted per state
// directory, plays step k. After the last step, "repeat": "last" (the
// default) plays the last step again and "repeat": "auto" plays
// {"auto": true}. Without FAKE_CLAUDE_SCENARIO every invocation is
// {"auto": true}. Unknown step fields are an error.
//
// "roles": {"reviewer": [steps], "planner": [steps]} scripts the
// invocations whose prompt gives the agent a role ("## Role: reviewer"):
// the k-th invocation of a role plays its k-th step, the last one
// repeated; invocations without a role, or of a role the scenario does
// not script, play "steps" as above.
//
// A file next-step.json in the state directory (see State), holding one
// step, is played by the next invocation without a role instead of its
// own step, then removed: with or without a scenario, it makes the agent
// do one thing once, such as ask a checkpoint:
//
//	{"auto": true, "checkpoint": {"type": "decision", "question": "Which library?", "options": ["a", "b"]}}
//
// Step fields, all optional:
//
//	auto          true: do the next unit of work. A planner (a prompt with
//	              "## Role: planner") writes prd.json: a story per clause of
//	              the idea under "## The idea" (split at commas, "and",
//	              "with"), each with "Typecheck passes" among its acceptance
//	              criteria, priorities in order and branchName ralph/<idea>; a
//	              prd.json that is there is extended, keeping its stories, and
//	              a person's reason to reject the last plan becomes a story. A
//	              reviewer ("## Role: reviewer") changes nothing and ends with
//	              <verdict>pass</verdict>. Any other prompt does the next unit
//	              of the workspace's task file:
//	              prd.json: the story with passes=false and the lowest priority
//	              gets a file story-<id>.txt (or the files in "files"), its
//	              "passes" set to true (the rest of the file is left byte for
//	              byte) and a line in progress.txt; when no story is left, the
//	              run claims <promise>COMPLETE</promise> and changes nothing.
//	              progress.md: the first "- [ ]" under "## Tasks" is checked and
//	              task-<n>.txt written; the run that checks the last box also
//	              writes RALPH_DONE as the first line of "## Status" and claims
//	              RALPH_DONE. PROMPT.md: its first unchecked box, like
//	              progress.md, claiming LOOP_COMPLETE when none is left; without
//	              boxes, writes work-<k>.txt and claims LOOP_COMPLETE.
//	files         ["path", ...]: the files auto writes instead of its default.
//	write         {"path": "content", ...}: files to write (Write tool calls).
//	counter_file  "path": read an integer from the file (0 if absent), write it plus one.
//	checkpoint    string or JSON value: written to .ralph/checkpoint.json.
//	commit        true or "message": run git add -A && git commit -m <message>.
//	claim         true: end the final text with the promise of the task file's
//	              mode; "text": end it with that text; false: never claim.
//	text          the final assistant text (default: a summary of the work).
//	cost_usd      total_cost_usd of the result (default 0.0125).
//	usage         {"input_tokens", "output_tokens", "cache_creation_input_tokens",
//	              "cache_read_input_tokens"} of the result (default 1200/350/4000/15000).
//	num_turns     num_turns of the result (default: the assistant turns played).
//	exit_code     exit status after the result (default 0, 1 for error results).
//	is_error      true: end with an error_during_execution result whose errors
//	error_text    hold error_text (also printed on stderr).
//	stderr        text to print on stderr.
//	sleep_ms      run a Bash tool call that takes this long, printing
//	              tool_progress events every second meanwhile.
//	sleep_after_ms  the same, after the step's work is on disk (before its
//	              commit and result): a kill then leaves the work uncommitted.
//	hang          true: print system/init, start a child "sleep 300" (so that
//	              killing the process group is exercised) and never finish.
//	garbage       true or N: print N (default 12) lines that are not JSON
//	              instead of the stream and exit with exit_code (default 1).
//	crash         true or N: exit with status N (default 1) in the middle of
//	              the stream, after the first tool call, without a result.
//	rate_limit    true or N: a rate_limit_event with status rejected and
//	              resetsAt N seconds (default 3600) from now, then the error
//	              result Claude Code prints for a usage limit, exit 1.
//	auth_error    true: the output of Claude Code with an invalid API key, exit 1.
//	flood_mb      N: print N MB of assistant text events before the work
//	flood_line_kb (each event's text flood_line_kb KB long, default 64).
//
// # State
//
// The invocation counter, a lock and calls.jsonl live in
// FAKE_CLAUDE_STATE_DIR, or <workspace>/.ralph/fake-claude without it.
// Every run appends one JSON object to calls.jsonl:
//
//	{"n": 1, "time": "...", "cwd": "...", "argv": [...], "prompt": "...", "session_id": "...", "host": "..."}
//
// so that tests can check what prompt each iteration got; host is
// FAKE_CLAUDE_HOST, the machine a test says the agent ran on. Invocations that
// fail on their command line or prompt, or --resume an unknown session,
// play no step and are not recorded.
package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// version is what --version prints, as the real CLI does.
const version = "2.1.329 (Claude Code)"

func main() {
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit status.
func run(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, err := parseArgs(argv[1:])
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	switch {
	case opts.version:
		fmt.Fprintln(stdout, version)
		return 0
	case opts.help:
		fmt.Fprint(stdout, helpText)
		return 0
	case !opts.print:
		fmt.Fprintln(stderr, "fakeclaude: only print mode is supported: run it with -p")
		return 1
	}
	if opts.sessionID != "" && !uuidRE.MatchString(opts.sessionID) {
		fmt.Fprintln(stderr, "Error: Invalid session ID. Must be a valid UUID.")
		return 1
	}

	prompt := opts.prompt
	if !opts.hasPrompt {
		prompt, err = readPrompt(stdin)
		if err != nil {
			fmt.Fprintf(stderr, "fakeclaude: read prompt: %v\n", err)
			return 1
		}
	}
	switch {
	case prompt == "":
		fmt.Fprintln(stderr, "Error: Input must be provided either through stdin or as a prompt argument when using --print")
		return 1
	case strings.TrimSpace(prompt) == "":
		fmt.Fprintln(stderr, "Error: Input contained only whitespace. Provide a prompt with text through stdin or as a prompt argument when using --print")
		return 1
	case opts.outputFormat == "stream-json" && !opts.verbose:
		fmt.Fprintln(stderr, "Error: When using --print, --output-format=stream-json requires --verbose")
		return 1
	}

	a, err := newAgent(argv, opts, prompt, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "fakeclaude: %v\n", err)
		return 2
	}
	return a.play()
}

// readPrompt reads the prompt from standard input, unless it is a
// terminal.
func readPrompt(stdin io.Reader) (string, error) {
	if f, ok := stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return "", nil
		}
	}
	data, err := io.ReadAll(stdin)
	return string(data), err
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// options is the command line.
type options struct {
	print, verbose, version, help bool
	skipPermissions               bool
	outputFormat                  string
	model                         string
	permissionMode                string
	maxTurns                      int
	resume                        string
	sessionID                     string
	appendSystemPrompt            string
	allowedTools                  []string
	prompt                        string
	hasPrompt                     bool
}

// argKind is how a flag takes its argument, as commander.js, which the
// real CLI uses, defines it.
type argKind int

const (
	noArg       argKind = iota
	requiredArg         // --flag <value>
	optionalArg         // --flag [value]
	variadicArg         // --flag <values...>
)

// flagSpec describes one flag of the real CLI.
type flagSpec struct {
	flags   string // as commander prints it in errors, "--model <model>"
	kind    argKind
	choices []string
	number  bool
}

// flagSpecs are the real CLI's flags, by long name.
var flagSpecs = map[string]flagSpec{}

// flagNames maps every spelling of a flag to its long name.
var flagNames = map[string]string{}

func init() {
	for _, f := range []flagSpec{
		{flags: "-p, --print"},
		{flags: "--verbose"},
		{flags: "-v, --version"},
		{flags: "-h, --help"},
		{flags: "--dangerously-skip-permissions"},
		{flags: "--allow-dangerously-skip-permissions"},
		{flags: "-c, --continue"},
		{flags: "--fork-session"},
		{flags: "--include-partial-messages"},
		{flags: "--include-hook-events"},
		{flags: "--replay-user-messages"},
		{flags: "--no-session-persistence"},
		{flags: "--strict-mcp-config"},
		{flags: "--disable-slash-commands"},
		{flags: "--bare"},
		{flags: "--ide"},
		{flags: "--chrome"},
		{flags: "--no-chrome"},
		{flags: "--safe-mode"},
		{flags: "--restricted"},
		{flags: "--brief"},
		{flags: "--exclude-dynamic-system-prompt-sections"},
		{flags: "--forward-subagent-text"},
		{flags: "-d, --debug [filter]", kind: optionalArg},
		{flags: "-r, --resume [value]", kind: optionalArg},
		{flags: "--prompt-suggestions [value]", kind: optionalArg},
		{flags: "--output-format <format>", kind: requiredArg, choices: []string{"text", "json", "stream-json"}},
		{flags: "--input-format <format>", kind: requiredArg, choices: []string{"text", "stream-json"}},
		{flags: "--model <model>", kind: requiredArg},
		{flags: "--fallback-model <model>", kind: requiredArg},
		{flags: "--max-turns <turns>", kind: requiredArg, number: true},
		{flags: "--max-budget-usd <amount>", kind: requiredArg, number: true},
		{flags: "--session-id <uuid>", kind: requiredArg},
		{flags: "--system-prompt <prompt>", kind: requiredArg},
		{flags: "--system-prompt-file <file>", kind: requiredArg},
		{flags: "--append-system-prompt <prompt>", kind: requiredArg},
		{flags: "--append-system-prompt-file <file>", kind: requiredArg},
		{flags: "--permission-mode <mode>", kind: requiredArg,
			choices: []string{"acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan"}},
		{flags: "--permission-prompt-tool <tool>", kind: requiredArg},
		{flags: "--settings <file-or-json>", kind: requiredArg},
		{flags: "--setting-sources <sources>", kind: requiredArg},
		{flags: "--effort <level>", kind: requiredArg},
		{flags: "--agent <agent>", kind: requiredArg},
		{flags: "--agents <json-or-file>", kind: requiredArg},
		{flags: "--json-schema <schema>", kind: requiredArg},
		{flags: "--debug-file <path>", kind: requiredArg},
		{flags: "-n, --name <name>", kind: requiredArg},
		{flags: "--add-dir <directories...>", kind: variadicArg},
		{flags: "--allowedTools, --allowed-tools <tools...>", kind: variadicArg},
		{flags: "--disallowedTools, --disallowed-tools <tools...>", kind: variadicArg},
		{flags: "--tools <tools...>", kind: variadicArg},
		{flags: "--mcp-config <configs...>", kind: variadicArg},
		{flags: "--betas <betas...>", kind: variadicArg},
		{flags: "--plugin-dir <path>", kind: requiredArg},
	} {
		names := strings.Fields(strings.ReplaceAll(f.flags, ",", " "))
		var long string
		for _, n := range names {
			if strings.HasPrefix(n, "--") {
				long = n
				break
			}
		}
		flagSpecs[long] = f
		for _, n := range names {
			if strings.HasPrefix(n, "-") {
				flagNames[n] = long
			}
		}
	}
}

// cliError is a command-line error, worded as the real CLI words it.
type cliError string

func (e cliError) Error() string { return string(e) }

func cliErrorf(format string, args ...any) error {
	return cliError(fmt.Sprintf(format, args...))
}

// parseArgs parses a command line the way the real CLI does, with its
// error texts.
func parseArgs(args []string) (options, error) {
	p := parsed{values: map[string][]string{}, set: map[string]bool{}}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			p.positional = append(p.positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			p.positional = append(p.positional, arg)
			continue
		}
		var err error
		if i, err = p.flag(args, i); err != nil {
			return options{outputFormat: "text"}, err
		}
		if p.set["--version"] {
			return options{outputFormat: "text", version: true}, nil
		}
	}
	return p.options(), nil
}

// parsed is a command line as parseArgs reads it.
type parsed struct {
	// values are the arguments of each flag (by its long name), set the
	// flags given.
	values     map[string][]string
	set        map[string]bool
	positional []string
}

// flag reads the flag args[i] and its arguments; it returns the index of
// the last argument it read.
func (p *parsed) flag(args []string, i int) (int, error) {
	arg := args[i]
	name, inline, hasInline := strings.Cut(arg, "=")
	if !strings.HasPrefix(name, "--") {
		hasInline = false
		name = arg
	}
	long, ok := flagNames[name]
	if !ok {
		return i, cliErrorf("error: unknown option '%s'", name)
	}
	spec := flagSpecs[long]
	p.set[long] = true
	if hasInline {
		if spec.kind == noArg {
			return i, cliErrorf("error: option '%s' argument '%s' is invalid", spec.flags, inline)
		}
		p.values[long] = append(p.values[long], inline)
	}
	// next reports whether args[i+1] is an argument of the flag.
	next := func() bool { return i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") }
	switch {
	case spec.kind == requiredArg && !hasInline && i+1 < len(args),
		spec.kind == optionalArg && !hasInline && next():
		i++
		p.values[long] = append(p.values[long], args[i])
	case spec.kind == requiredArg && !hasInline:
		return i, cliErrorf("error: option '%s' argument missing", spec.flags)
	case spec.kind == variadicArg:
		for next() {
			i++
			p.values[long] = append(p.values[long], args[i])
		}
		if len(p.values[long]) == 0 {
			return i, cliErrorf("error: option '%s' argument missing", spec.flags)
		}
	}
	return i, check(spec, p.values[long])
}

// check checks the last of the arguments v of a flag against its spec.
func check(spec flagSpec, v []string) error {
	if len(v) == 0 {
		return nil
	}
	last := v[len(v)-1]
	if spec.choices != nil && !slices.Contains(spec.choices, last) {
		return cliErrorf("error: option '%s' argument '%s' is invalid. Allowed choices are %s.",
			spec.flags, last, strings.Join(spec.choices, ", "))
	}
	if spec.number {
		if _, err := strconv.ParseFloat(last, 64); err != nil {
			return cliErrorf("error: option '%s' argument '%s' is invalid. must be a number", spec.flags, last)
		}
	}
	return nil
}

// last is the last argument of the flag name; "" if it has none.
func (p *parsed) last(name string) string {
	if v := p.values[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// options are the options of the command line.
func (p *parsed) options() options {
	o := options{
		outputFormat:       "text",
		print:              p.set["--print"],
		verbose:            p.set["--verbose"],
		help:               p.set["--help"],
		skipPermissions:    p.set["--dangerously-skip-permissions"],
		model:              p.last("--model"),
		permissionMode:     p.last("--permission-mode"),
		resume:             p.last("--resume"),
		sessionID:          p.last("--session-id"),
		appendSystemPrompt: p.last("--append-system-prompt"),
	}
	if v := p.last("--output-format"); v != "" {
		o.outputFormat = v
	}
	if v := p.last("--max-turns"); v != "" {
		f, _ := strconv.ParseFloat(v, 64)
		o.maxTurns = int(f)
	}
	for _, v := range p.values["--allowedTools"] {
		o.allowedTools = append(o.allowedTools, strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })...)
	}
	if len(p.positional) > 0 {
		o.prompt, o.hasPrompt = p.positional[0], true
	}
	return o
}

const helpText = `Usage: claude [options] [command] [prompt]

fakeclaude: a scripted stand-in for Claude Code 2.1.329 (print mode only).
See the package documentation for the scenario format.

Options:
  -p, --print                       Print response and exit
  --output-format <format>          "text" (default), "json" or "stream-json"
  --verbose                         Required with --output-format=stream-json
  --dangerously-skip-permissions    Accepted and reported in system/init
  --model <model>                   Model named in the output
  --max-turns <turns>               End with error_max_turns past this many turns
  -r, --resume [value]              Resume a session this fake agent started
  --session-id <uuid>               Use a specific session ID
  -v, --version                     Output the version number
  -h, --help                        Display help for command
`
