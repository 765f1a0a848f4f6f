package responsesapi

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/durable-ralph/ralph/testsuite/scripted"
)

// storyIDRE is a story id the script puts in file names and commands as
// it is.
var storyIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// CompletePromise is what RalphPRDScript answers when every story passes:
// Ralph's default completion promise for prd.json.
const CompletePromise = scripted.CompletePromise

// RalphPRDScript plays the model in a Ralph loop over a prd.json whose
// stories each sit on one line, through Codex's shell (scripted.Ralph).
// For the story the latest Ralph prompt of the conversation names under
// "## This iteration: <id>", it replies in successive turns:
//
//  1. printf writes story-<id>.txt;
//  2. sed sets "passes": true on the story's line of prd.json;
//  3. echo appends a line to progress.txt;
//  4. the text "Implemented <id>.".
//
// Which step comes next is read from the conversation: a step is done
// once its command ran (Codex sent back its output, and not "aborted",
// which is what Codex sends for a call cut off by the end of its
// process). So a resumed conversation (codex exec resume) carries on with
// the steps left. A request of Codex's to compact the conversation gets a
// summary.
func RalphPRDScript() Script {
	play := scripted.RalphScript[Request, Reply](ralph{})
	return func(req *Request) Reply {
		if req.Kind() == "compaction" {
			return Text("Summary: a Ralph loop iteration over prd.json is under way.")
		}
		return play(req)
	}
}

// ralph plays RalphPRDScript.
type ralph struct{}

// Text is a reply of text.
func (ralph) Text(s string) Reply { return Text(s) }

// Story accepts the ids that are safe in a shell command as they are.
func (ralph) Story(id string) bool { return id != "repair" && storyIDRE.MatchString(id) }

// Prompt is the text of the conversation's latest user message that
// is a Ralph iteration prompt, "" if none is.
func (ralph) Prompt(req *Request) string {
	var texts []string
	for _, m := range req.Messages("user") {
		texts = append(texts, m.Text)
	}
	return scripted.LatestRalphPrompt(texts...)
}

// Done are the steps of story id whose commands ran.
func (ralph) Done(req *Request, id string) map[scripted.Step]bool {
	done := map[scripted.Step]bool{}
	for _, tc := range req.ToolCalls() {
		cmd := tc.Command
		if !tc.HasOutput || strings.TrimSpace(tc.Output) == "aborted" || !strings.Contains(cmd, id) {
			continue
		}
		switch {
		case strings.Contains(cmd, "printf") && strings.Contains(cmd, scripted.StoryFile(id)):
			done[scripted.StepWrite] = true
		case strings.Contains(cmd, "sed -i") && strings.Contains(cmd, "prd.json"):
			done[scripted.StepPasses] = true
		case strings.Contains(cmd, ">> progress.txt"):
			done[scripted.StepProgress] = true
		}
	}
	return done
}

// Play is the shell command that takes step of story id; the id is
// safe in a shell command as it is (storyIDRE).
func (ralph) Play(_ *Request, id string, step scripted.Step) Reply {
	switch step {
	case scripted.StepWrite:
		return Shell(fmt.Sprintf(`printf 'Story %s is implemented.\n' > %s`, id, scripted.StoryFile(id))).
			WithText(scripted.Starting(id))
	case scripted.StepPasses:
		return Shell(scripted.PassesCommand(strings.ReplaceAll(id, ".", `\.`)))
	}
	return Shell(scripted.ProgressCommand(id))
}
