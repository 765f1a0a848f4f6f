package geminiapi

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Texts of Ralph's iteration prompt (tasks/prompt.go) that
// RalphPRDScript reads.
var (
	ralphPromptRE = regexp.MustCompile(`(?m)^# Ralph loop: iteration \d+`)
	storyRE       = regexp.MustCompile(`(?m)^## This iteration: (\S+)`)
	verifyRE      = regexp.MustCompile(`(?m)^## This iteration: verify\s*$`)
)

// CompletePromise is what RalphPRDScript answers when every story passes:
// Ralph's default completion promise for prd.json.
const CompletePromise = "<promise>COMPLETE</promise>"

// RalphPRDScript plays the model in a Ralph loop over a prd.json whose
// stories each sit on one line. For the story the prompt names under
// "## This iteration: <id>", it replies in successive turns:
//
//  1. write_file story-<id>.txt;
//  2. run_shell_command: sed sets "passes": true on the story's line of
//     prd.json;
//  3. run_shell_command: append a line to progress.txt;
//  4. the text "Implemented <id>.".
//
// Which step comes next is read from the conversation (the function calls
// made so far for that story), so a resumed conversation (gemini --resume)
// carries on with the steps left. When the prompt says every story is
// done (the verify section), it answers with the completion promise on
// its own line. A conversation that is not Ralph's gets a short text.
//
// The prompt is the latest user text of the conversation that is a Ralph
// prompt: a resumed session brings the earlier prompts with it.
func RalphPRDScript() Script {
	return func(req *Request) Reply {
		prompt := ralphPrompt(req)
		switch {
		case prompt == "":
			return Text("OK")
		case verifyRE.MatchString(prompt):
			return Text("Every story in prd.json passes and the checks hold.\n" + CompletePromise)
		}
		m := storyRE.FindStringSubmatch(prompt)
		if m == nil {
			return Text("I could not find the story to work on.")
		}
		return ralphStep(req, m[1])
	}
}

// ralphPrompt is the latest Ralph iteration prompt of the conversation;
// "" if there is none.
func ralphPrompt(req *Request) string {
	texts := req.UserTexts()
	for i := len(texts) - 1; i >= 0; i-- {
		if ralphPromptRE.MatchString(texts[i]) {
			return texts[i]
		}
	}
	return ""
}

// Steps of one story, in order.
const (
	stepWrite = iota
	stepPasses
	stepProgress
	stepDone
)

// ralphStep is the next reply for story id.
func ralphStep(req *Request, id string) Reply {
	file := "story-" + id + ".txt"
	done := map[int]bool{}
	for _, c := range req.FunctionCalls() {
		cmd := c.Arg("command")
		switch {
		case c.Name == WriteFileTool && strings.HasSuffix(c.Arg("file_path"), file):
			done[stepWrite] = true
		case c.Name == ShellTool && strings.Contains(cmd, "sed -i") && strings.Contains(cmd, "prd.json") && strings.Contains(cmd, `"`+id+`"`):
			done[stepPasses] = true
		case c.Name == ShellTool && strings.Contains(cmd, "progress.txt") && strings.Contains(cmd, id):
			done[stepProgress] = true
		}
	}
	next := stepWrite
	for next < stepDone && done[next] {
		next++
	}
	switch next {
	case stepWrite:
		return WriteFile(file, fmt.Sprintf("Story %s is implemented.\n", id)).WithText(fmt.Sprintf("I'll implement %s.", id))
	case stepPasses:
		return Shell(fmt.Sprintf(`sed -i '/"id": "%s"/ s/"passes": false/"passes": true/' prd.json`, id))
	case stepProgress:
		return Shell(fmt.Sprintf(`echo '%s %s: wrote %s and marked it passing' >> progress.txt`, time.Now().UTC().Format("2006-01-02"), id, file))
	}
	return Text(fmt.Sprintf("Implemented %s.", id))
}
