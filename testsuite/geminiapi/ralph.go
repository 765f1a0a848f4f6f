package geminiapi

import (
	"strings"

	"github.com/durable-ralph/ralph/testsuite/scripted"
)

// CompletePromise is what RalphPRDScript answers when every story passes:
// Ralph's default completion promise for prd.json.
const CompletePromise = scripted.CompletePromise

// RalphPRDScript plays the model in a Ralph loop over a prd.json whose
// stories each sit on one line (scripted.Ralph). For the story the prompt
// names under "## This iteration: <id>", it replies in successive turns:
//
//  1. write_file story-<id>.txt;
//  2. run_shell_command: sed sets "passes": true on the story's line of
//     prd.json;
//  3. run_shell_command: append a line to progress.txt;
//  4. the text "Implemented <id>.".
//
// Which step comes next is read from the conversation (the function calls
// made so far for that story), so a resumed conversation (gemini --resume)
// carries on with the steps left. The prompt is the latest user text of
// the conversation that is a Ralph prompt: a resumed session brings the
// earlier prompts with it.
func RalphPRDScript() Script {
	return scripted.RalphScript[Request, Reply](ralph{})
}

// ralph plays RalphPRDScript.
type ralph struct{}

// Text is a reply of text.
func (ralph) Text(s string) Reply { return Text(s) }

// Prompt is the conversation's Ralph prompt.
func (ralph) Prompt(req *Request) string { return scripted.LatestRalphPrompt(req.UserTexts()...) }

// Done are the steps of story id the conversation has done.
func (ralph) Done(req *Request, id string) map[scripted.Step]bool {
	done := map[scripted.Step]bool{}
	for _, c := range req.FunctionCalls() {
		cmd := c.Arg("command")
		switch {
		case c.Name == WriteFileTool && strings.HasSuffix(c.Arg("file_path"), scripted.StoryFile(id)):
			done[scripted.StepWrite] = true
		case c.Name == ShellTool && strings.Contains(cmd, "sed -i") && strings.Contains(cmd, "prd.json") && strings.Contains(cmd, `"`+id+`"`):
			done[scripted.StepPasses] = true
		case c.Name == ShellTool && strings.Contains(cmd, "progress.txt") && strings.Contains(cmd, id):
			done[scripted.StepProgress] = true
		}
	}
	return done
}

// Play is the reply that takes step of story id.
func (ralph) Play(_ *Request, id string, step scripted.Step) Reply {
	switch step {
	case scripted.StepWrite:
		return WriteFile(scripted.StoryFile(id), scripted.StoryContent(id)).WithText(scripted.Starting(id))
	case scripted.StepPasses:
		return Shell(scripted.PassesCommand(id))
	}
	return Shell(scripted.ProgressCommand(id))
}
