package modelserver

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/durable-ralph/ralph/testsuite/scripted"
)

// cwdRE is the working directory Claude Code names in the environment it
// describes.
var cwdRE = regexp.MustCompile(`(?m)^\s*(?:-\s*)?(?:Primary working directory|Working directory): *(\S.*?)\s*$`)

// CompletePromise is what RalphPRDScript answers when every story passes:
// Ralph's default completion promise for prd.json.
const CompletePromise = scripted.CompletePromise

// RalphPRDScript plays the model in a Ralph loop over a prd.json whose
// stories each sit on one line (scripted.Ralph). For the story the prompt
// names under "## This iteration: <id>", it replies in successive turns:
//
//  1. Write story-<id>.txt;
//  2. Bash: sed sets "passes": true on the story's line of prd.json;
//  3. Bash: append a line to progress.txt;
//  4. the text "Implemented <id>.".
//
// Which step comes next is read from the conversation (the tool calls made
// so far), so a resumed conversation (claude --resume, "You were
// interrupted...") carries on with the steps left. The prompt is the
// conversation's first user text; the CLI's own side requests get a short
// text.
func RalphPRDScript() Script {
	return scripted.RalphScript[Request, Reply](ralph{})
}

// ralph plays RalphPRDScript.
type ralph struct{}

// Text is a reply of text.
func (ralph) Text(s string) Reply { return Text(s) }

// Prompt is the conversation's Ralph prompt.
func (ralph) Prompt(req *Request) string { return scripted.LatestRalphPrompt(req.Prompt()) }

// Done are the steps of story id the conversation has done.
func (ralph) Done(req *Request, id string) map[scripted.Step]bool {
	done := map[scripted.Step]bool{}
	for _, tu := range req.ToolUses() {
		in := string(tu.Input)
		switch {
		case tu.Name == "Write" && strings.Contains(in, scripted.StoryFile(id)):
			done[scripted.StepWrite] = true
		case tu.Name == "Bash" && strings.Contains(in, "sed -i") && strings.Contains(in, "prd.json"):
			done[scripted.StepPasses] = true
		case tu.Name == "Bash" && strings.Contains(in, "progress.txt"):
			done[scripted.StepProgress] = true
		}
	}
	return done
}

// Play is the reply that takes step of story id.
func (ralph) Play(req *Request, id string, step scripted.Step) Reply {
	switch step {
	case scripted.StepWrite:
		path := scripted.StoryFile(id)
		if cwd := workingDir(req); cwd != "" {
			path = filepath.Join(cwd, path)
		}
		return ToolUse("Write", map[string]any{
			"file_path": path,
			"content":   scripted.StoryContent(id),
		}).WithText(scripted.Starting(id))
	case scripted.StepPasses:
		return ToolUse("Bash", map[string]any{
			"command":     scripted.PassesCommand(id),
			"description": "Mark " + id + " as passing in prd.json",
		})
	}
	return ToolUse("Bash", map[string]any{
		"command":     scripted.ProgressCommand(id),
		"description": "Record " + id + " in progress.txt",
	})
}

// workingDir is the directory the CLI says it works in ("Primary working
// directory: ..." in the environment it describes in the system prompt or
// in a system message); "" if it names none.
func workingDir(req *Request) string {
	texts := []string{req.System}
	for _, m := range req.Messages {
		texts = append(texts, m.Text())
	}
	for _, s := range texts {
		if m := cwdRE.FindStringSubmatch(s); m != nil && filepath.IsAbs(m[1]) {
			return m[1]
		}
	}
	return ""
}
