package modelserver

import (
	"fmt"
	"path/filepath"
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
	cwdRE         = regexp.MustCompile(`(?m)^\s*(?:-\s*)?(?:Primary working directory|Working directory): *(\S.*?)\s*$`)
)

// CompletePromise is what RalphPRDScript answers when every story passes:
// Ralph's default completion promise for prd.json.
const CompletePromise = "<promise>COMPLETE</promise>"

// RalphPRDScript plays the model in a Ralph loop over a prd.json whose
// stories each sit on one line. For the story the prompt names under
// "## This iteration: <id>", it replies in successive turns:
//
//  1. Write story-<id>.txt;
//  2. Bash: sed sets "passes": true on the story's line of prd.json;
//  3. Bash: append a line to progress.txt;
//  4. the text "Implemented <id>.".
//
// Which step comes next is read from the conversation (the tool calls made
// so far), so a resumed conversation (claude --resume, "You were
// interrupted...") carries on with the steps left. When the prompt says
// every story is done (the verify section), it answers with the completion
// promise on its own line. Requests that are not a Ralph conversation (the
// CLI's own side requests) get a short text.
func RalphPRDScript() Script {
	return func(req *Request) Reply {
		prompt := req.Prompt()
		if !ralphPromptRE.MatchString(prompt) {
			return Text("OK")
		}
		if verifyRE.MatchString(prompt) {
			return Text("Every story in prd.json passes and the checks hold.\n" + CompletePromise)
		}
		m := storyRE.FindStringSubmatch(prompt)
		if m == nil {
			return Text("I could not find the story to work on.")
		}
		return ralphStep(req, m[1])
	}
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
	done := map[int]bool{}
	for _, tu := range req.ToolUses() {
		in := string(tu.Input)
		switch {
		case tu.Name == "Write" && strings.Contains(in, "story-"+id+".txt"):
			done[stepWrite] = true
		case tu.Name == "Bash" && strings.Contains(in, "sed -i") && strings.Contains(in, "prd.json"):
			done[stepPasses] = true
		case tu.Name == "Bash" && strings.Contains(in, "progress.txt"):
			done[stepProgress] = true
		}
	}
	next := stepWrite
	for next < stepDone && done[next] {
		next++
	}
	switch next {
	case stepWrite:
		path := "story-" + id + ".txt"
		if cwd := workingDir(req); cwd != "" {
			path = filepath.Join(cwd, path)
		}
		return ToolUse("Write", map[string]any{
			"file_path": path,
			"content":   fmt.Sprintf("Story %s is implemented.\n", id),
		}).WithText(fmt.Sprintf("I'll implement %s.", id))
	case stepPasses:
		return ToolUse("Bash", map[string]any{
			"command":     fmt.Sprintf(`sed -i '/"id": "%s"/ s/"passes": false/"passes": true/' prd.json`, id),
			"description": "Mark " + id + " as passing in prd.json",
		})
	case stepProgress:
		return ToolUse("Bash", map[string]any{
			"command":     fmt.Sprintf(`echo '%s %s: wrote story-%s.txt and marked it passing' >> progress.txt`, time.Now().UTC().Format("2006-01-02"), id, id),
			"description": "Record " + id + " in progress.txt",
		})
	}
	return Text(fmt.Sprintf("Implemented %s.", id))
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
