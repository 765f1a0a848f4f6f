package responsesapi

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
	storyRE       = regexp.MustCompile("(?m)^## This iteration: ([^\\s`]+)")
	verifyRE      = regexp.MustCompile(`(?m)^## This iteration: verify\s*$`)
	// storyIDRE is a story id the script puts in file names and commands
	// as it is.
	storyIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// CompletePromise is what RalphPRDScript answers when every story passes:
// Ralph's default completion promise for prd.json.
const CompletePromise = "<promise>COMPLETE</promise>"

// RalphPRDScript plays the model in a Ralph loop over a prd.json whose
// stories each sit on one line, through Codex's shell. For the story the
// latest Ralph prompt of the conversation names under "## This iteration:
// <id>", it replies in successive turns:
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
// the steps left. When the prompt says every story is done (the verify
// section), it answers with the completion promise on its own line.
// Requests that are not a Ralph conversation get a short text, and a
// request of Codex's to compact the conversation gets a summary.
func RalphPRDScript() Script {
	return func(req *Request) Reply {
		if req.Kind() == "compaction" {
			return Text("Summary: a Ralph loop iteration over prd.json is under way.")
		}
		prompt := ralphPrompt(req)
		if prompt == "" {
			return Text("OK")
		}
		if verifyRE.MatchString(prompt) {
			return Text("Every story in prd.json passes and the checks hold.\n" + CompletePromise)
		}
		m := storyRE.FindStringSubmatch(prompt)
		if m == nil || m[1] == "repair" || !storyIDRE.MatchString(m[1]) {
			return Text("I could not find the story to work on.")
		}
		return ralphStep(req, m[1])
	}
}

// ralphPrompt is the text of the conversation's latest user message that
// is a Ralph iteration prompt, "" if none is.
func ralphPrompt(req *Request) string {
	msgs := req.Messages("user")
	for i := len(msgs) - 1; i >= 0; i-- {
		if ralphPromptRE.MatchString(msgs[i].Text) {
			return msgs[i].Text
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
	done := map[int]bool{}
	for _, tc := range req.ToolCalls() {
		cmd := tc.Command
		if !tc.HasOutput || strings.TrimSpace(tc.Output) == "aborted" || !strings.Contains(cmd, id) {
			continue
		}
		switch {
		case strings.Contains(cmd, "printf") && strings.Contains(cmd, "story-"+id+".txt"):
			done[stepWrite] = true
		case strings.Contains(cmd, "sed -i") && strings.Contains(cmd, "prd.json"):
			done[stepPasses] = true
		case strings.Contains(cmd, ">> progress.txt"):
			done[stepProgress] = true
		}
	}
	next := stepWrite
	for next < stepDone && done[next] {
		next++
	}
	switch next {
	case stepWrite:
		return Shell(fmt.Sprintf(`printf 'Story %s is implemented.\n' > story-%s.txt`, id, id)).
			WithText(fmt.Sprintf("I'll implement %s.", id))
	case stepPasses:
		pattern := fmt.Sprintf(`/"id": "%s"/ s/"passes": false/"passes": true/`, strings.ReplaceAll(id, ".", `\.`))
		return Shell(fmt.Sprintf("sed -i %s prd.json", shellQuote(pattern)))
	case stepProgress:
		line := fmt.Sprintf("%s %s: wrote story-%s.txt and marked it passing", time.Now().UTC().Format("2006-01-02"), id, id)
		return Shell(fmt.Sprintf("echo %s >> progress.txt", shellQuote(line)))
	}
	return Text(fmt.Sprintf("Implemented %s.", id))
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
