package tasks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/durable-ralph/ralph/contract"
)

// Bounds that keep the prompt a reasonable size however large the files
// behind it grow.
const (
	// DefaultLearningsLimit is the most learnings text, in bytes, that goes
	// into a prompt.
	DefaultLearningsLimit = 8 << 10

	maxTaskContent = 24 << 10 // progress.md or PROMPT.md shown in the prompt
	maxStoryText   = 8 << 10  // the next story's description and criteria
	maxGuidance    = 8 << 10  // all guidance messages together
	maxListedItems = 60       // past this many stories, only pending ones are listed
)

// PromptInput is everything the iteration prompt is built from.
type PromptInput struct {
	Mode contract.Mode
	// State is the task file's state as the caller last loaded it. If its
	// File is empty, BuildPrompt loads it.
	State State
	// Iteration counts from 1. MaxIterations <= 0 means no limit.
	Iteration, MaxIterations int
	// CompletionPromise is what the agent prints to claim completion;
	// empty means DefaultPromise(Mode).
	CompletionPromise string
	// Guidance is human guidance for this iteration, oldest first.
	Guidance []string
	// Learnings is an excerpt of what earlier iterations recorded, such as
	// LoadLearnings returns; it may be empty.
	Learnings string
	// Notices are what Ralph itself must tell this iteration about the
	// last one: a branch it put back, history it found rewritten.
	Notices []string
	// Rules are the operator's standing rules for every iteration.
	Rules []string
	// MemoriesFile is the absolute path of the learnings file shared by
	// all issues of a queue (issue mode); Learnings holds its tail.
	MemoriesFile string
	// Instructions are the project's own instructions for every
	// iteration, from InstructionsFile (LoadInstructions).
	Instructions, InstructionsFile string
	// AgentsFile is the file where agents keep reusable learnings about
	// the codebase for every agent session (AgentsFileOf); "" leaves it
	// unmentioned.
	AgentsFile string
}

// maxInstructions bounds the project instructions shown in a prompt.
const maxInstructions = 16 << 10

// LoadInstructions reads the project instructions file name of dir; one
// that is a symlink out of dir is an *OutsideError.
func LoadInstructions(dir, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	data, err := readInside(dir, name)
	if err != nil {
		return "", fmt.Errorf("task.instructions-file: %w", err)
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("task.instructions-file %s is not UTF-8 text", name)
	}
	return string(data), nil
}

// AgentsFileOf is where agents of dir keep their reusable learnings:
// CLAUDE.md when the project has that and no AGENTS.md, else AGENTS.md.
func AgentsFileOf(dir string) string {
	_, errAgents := os.Stat(filepath.Join(dir, "AGENTS.md"))
	_, errClaude := os.Stat(filepath.Join(dir, "CLAUDE.md"))
	if errAgents != nil && errClaude == nil {
		return "CLAUDE.md"
	}
	return "AGENTS.md"
}

// BuildPrompt assembles the markdown prompt the agent of one iteration gets
// on stdin: what a Ralph iteration is, the state of the task file, the one
// story or task to do now, how to check and record it, the learnings and
// human guidance, and exactly when to print the completion promise.
func BuildPrompt(dir string, in PromptInput) (string, error) {
	mode := in.Mode
	if mode == "" {
		mode = in.State.Mode
	}
	if !mode.Valid() {
		return "", fmt.Errorf("build prompt: invalid task mode %q: want one of %s", mode, modeList())
	}
	st := in.State
	if st.File == "" {
		var err error
		if st, err = Load(dir, mode); err != nil {
			return "", fmt.Errorf("build prompt: %w", err)
		}
	} else if st.Mode != mode {
		return "", fmt.Errorf("build prompt: state is for mode %q, not %q", st.Mode, mode)
	}
	promise := strings.TrimSpace(in.CompletionPromise)
	if promise == "" {
		promise = DefaultPromise(mode)
	}

	p := &promptWriter{in: in, st: st, promise: promise}
	var err error
	switch mode {
	case contract.ModePRD:
		err = p.prd(dir)
	case contract.ModeProgress:
		err = p.progress(dir)
	case contract.ModePrompt:
		err = p.prompt(dir)
	case contract.ModeIssue:
		err = p.issue(dir)
	}
	if err != nil {
		return "", fmt.Errorf("build prompt: %w", err)
	}
	return p.String(), nil
}

// promptWriter builds one prompt.
type promptWriter struct {
	strings.Builder
	in      PromptInput
	st      State
	promise string
}

func (p *promptWriter) printf(format string, args ...any) {
	fmt.Fprintf(p, format, args...)
}

// intro writes the title and what a Ralph iteration is. memory names the
// files an iteration keeps its state in.
func (p *promptWriter) intro(memory string) {
	if p.in.MaxIterations > 0 {
		p.printf("# Ralph loop: iteration %d of %d\n\n", p.in.Iteration, p.in.MaxIterations)
	} else {
		p.printf("# Ralph loop: iteration %d\n\n", p.in.Iteration)
	}
	p.printf("You are one iteration of an autonomous coding loop (a \"Ralph loop\") working in this repository. "+
		"Each iteration is a new agent process that starts with a fresh context: you remember nothing of the iterations before you. "+
		"What they did is on disk, in %s, the code and the git history; what you leave there is all the next iteration will know.\n\n", memory)
	p.printf("Do one unit of work, verify it, record it, commit it and stop.\n\n")
	if p.in.MaxIterations > 0 && p.in.Iteration >= p.in.MaxIterations {
		p.printf("This is the last iteration the loop allows, so leave the repository and the task file in a clean, committed state.\n\n")
	}
}

// BuildRepairPrompt assembles the prompt of an iteration that finds the
// task file unreadable: the parse error with its position, the file as it
// is, and the one job of this iteration, to repair it keeping every story
// or task and its state.
func BuildRepairPrompt(dir string, in PromptInput, loadErr error) string {
	p := &promptWriter{in: in}
	file := in.Mode.File()
	var fe *FileError
	if errors.As(loadErr, &fe) && fe.File != "" {
		file = fe.File
	}
	p.intro(fmt.Sprintf("`%s`, the code and the git history", file))
	p.guidance()
	p.printf("## The task file is broken\n\n")
	p.printf("`%s` cannot be read, so the loop cannot tell what is done and what is next:\n\n", file)
	p.block(loadErr.Error())
	p.printf("## This iteration: repair `%s`\n\n", file)
	p.printf("1. Look at the error above and at the file's history (`git log -p --follow -- %s`): find the last version that was valid and what changed since.\n", file)
	p.printf("2. Repair the file so that it is valid again. Keep every story or task that is in it or in its last valid version, with its state (`passes`, checked boxes) as the work in the repository shows it. Do not delete, merge or rename any of them to make the file parse.\n")
	p.printf("3. Read the file again after your change to check that it is valid (for JSON, parse it, e.g. `python3 -m json.tool %s`).\n", file)
	p.printf("4. Commit the repair with the message `fix: repair %s`. Do no other work in this iteration.\n\n", file)
	if data, err := readTaskFile(dir, file); err == nil {
		s := string(data)
		if len(s) > maxTaskContent {
			s = truncateHead(s, maxTaskContent)
		}
		p.printf("## `%s` as it is now\n\n", file)
		p.block(s)
	}
	p.printf("Do not claim completion in this iteration: end your reply with a short summary of the repair.\n")
	return p.String()
}

// block writes s as a fenced block whose fence s cannot close.
func (p *promptWriter) block(s string) {
	f := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	p.printf("%s\n%s\n%s\n\n", f, strings.TrimRight(s, "\n"), f)
}

// completion writes when and how to print the promise; claim describes
// when the work is done.
// CheckpointFile is where the agent writes a question for a human.
const CheckpointFile = ".ralph/checkpoint.json"

// askHuman tells the agent how to stop and ask a person.
func (p *promptWriter) askHuman() {
	p.printf("## Asking a human\n\n")
	p.printf("If you cannot go on without a person (a decision only they can make, something to verify by hand, an action such as creating an account or a secret), "+
		"do not guess and do not stop the loop. Write `%s` and end your turn:\n\n", CheckpointFile)
	p.printf("```json\n{\"type\": \"decision\", \"question\": \"Which database should the catalogue use?\", \"options\": [\"postgres\", \"sqlite\"], \"context\": \"what you found and what each option means\"}\n```\n\n")
	p.printf("`type` is `decision`, `human-verify` (a person must check something you did) or `human-action` (a person must do something); `options` and `context` are optional. " +
		"Instead of the file you may end your reply with `<checkpoint type=\"decision\">your question</checkpoint>`, one option per line starting with `- `. " +
		"The loop waits for the answer, as long as it takes, and gives it to the next iteration under \"Guidance from the operator\". Commit the work you finished before you ask.\n\n")
}

func (p *promptWriter) completion(claim string) {
	p.agentNotes()
	p.askHuman()
	p.printf("## Signalling completion\n\n")
	p.printf("The loop stops only when an iteration ends its reply with this line, alone on the line:\n\n")
	p.printf("%s\n\n", p.promise)
	p.printf("Write it only when %s. ", claim)
	p.printf("In every other case keep it out of your reply entirely: not quoted, not in a code block, not to say that the work is unfinished. " +
		"Just end your reply with a short summary of what you did and what comes next; the next iteration carries on from there.\n")
}
