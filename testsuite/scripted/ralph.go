package scripted

import (
	"fmt"
	"regexp"
	"time"
)

// Texts of Ralph's iteration prompt (tasks/prompt.go) that the Ralph
// scripts read.
var (
	ralphPromptRE = regexp.MustCompile(`(?m)^# Ralph loop: iteration \d+`)
	storyRE       = regexp.MustCompile("(?m)^## This iteration: ([^\\s`]+)")
	verifyRE      = regexp.MustCompile(`(?m)^## This iteration: verify\s*$`)
)

// CompletePromise is what a Ralph script answers when every story passes:
// Ralph's default completion promise for prd.json.
const CompletePromise = "<promise>COMPLETE</promise>"

// Texts of the Ralph scripts' replies.
const (
	// Verified is the reply to the verify iteration, the promise on its
	// own line.
	Verified = "Every story in prd.json passes and the checks hold.\n" + CompletePromise
	// NoStory is the reply to a Ralph prompt that names no story.
	NoStory = "I could not find the story to work on."
	// NotRalph is the reply to a conversation that is not Ralph's, such
	// as a CLI's side requests.
	NotRalph = "OK"
)

// LatestRalphPrompt is the last of texts that is a Ralph iteration
// prompt; "" if none is.
func LatestRalphPrompt(texts ...string) string {
	for i := len(texts) - 1; i >= 0; i-- {
		if ralphPromptRE.MatchString(texts[i]) {
			return texts[i]
		}
	}
	return ""
}

// Step is one step of a story as the Ralph scripts play it, in order.
type Step int

// The steps of a story.
const (
	// StepWrite writes StoryFile.
	StepWrite Step = iota
	// StepPasses sets "passes": true on the story's line of prd.json
	// (PassesCommand).
	StepPasses
	// StepProgress appends a line to progress.txt (ProgressCommand).
	StepProgress
	// StepDone is the text Implemented.
	StepDone
)

// StoryFile is the file the first step of story id writes.
func StoryFile(id string) string { return "story-" + id + ".txt" }

// StoryContent is what the first step of story id writes in StoryFile.
func StoryContent(id string) string { return fmt.Sprintf("Story %s is implemented.\n", id) }

// Starting is the text that comes with the first step of story id.
func Starting(id string) string { return fmt.Sprintf("I'll implement %s.", id) }

// Implemented is the text that ends story id.
func Implemented(id string) string { return fmt.Sprintf("Implemented %s.", id) }

// PassesCommand is the shell command of the second step of story id:
// sed sets "passes": true on the line of prd.json that holds the story
// (id as a sed pattern).
func PassesCommand(id string) string {
	return fmt.Sprintf(`sed -i '/"id": "%s"/ s/"passes": false/"passes": true/' prd.json`, id)
}

// ProgressCommand is the shell command of the third step of story id:
// echo appends a line to progress.txt.
func ProgressCommand(id string) string {
	return fmt.Sprintf("echo '%s %s: wrote %s and marked it passing' >> progress.txt", time.Now().UTC().Format("2006-01-02"), id, StoryFile(id))
}

// Player plays the model's side of a Ralph loop in the terms of one
// API: its requests R and its replies A.
type Player[R, A any] interface {
	// Prompt is the Ralph prompt the conversation works on; "" if it is
	// not Ralph's (LatestRalphPrompt).
	Prompt(req *R) string
	// Text is a reply of text that ends the turn.
	Text(s string) A
	// Done reports the steps of story id that the conversation has done.
	Done(req *R, id string) map[Step]bool
	// Play is the reply that takes step (StepWrite, StepPasses or
	// StepProgress) of story id.
	Play(req *R, id string, step Step) A
}

// StoryChecker is a Player that accepts or refuses the story id a prompt
// names (a refused one gets NoStory).
type StoryChecker interface {
	Story(id string) bool
}

// RalphScript is the script of a Ralph loop over a prd.json whose stories
// each sit on one line, played by p. For the story the prompt names under
// "## This iteration: <id>", it replies in successive turns with the
// steps of a story (StepWrite, StepPasses, StepProgress, then the text
// Implemented). Which step comes next is read from the conversation
// (Done), so a resumed conversation carries on with the steps left. When
// the prompt says every story is done (the verify section), it answers
// Verified, the completion promise on its own line; a conversation that
// is not Ralph's gets NotRalph.
func RalphScript[R, A any](p Player[R, A]) func(req *R) A {
	return func(req *R) A {
		prompt := p.Prompt(req)
		switch {
		case prompt == "":
			return p.Text(NotRalph)
		case verifyRE.MatchString(prompt):
			return p.Text(Verified)
		}
		m := storyRE.FindStringSubmatch(prompt)
		if m == nil || !accepts(p, m[1]) {
			return p.Text(NoStory)
		}
		id := m[1]
		done := p.Done(req, id)
		next := StepWrite
		for next < StepDone && done[next] {
			next++
		}
		if next == StepDone {
			return p.Text(Implemented(id))
		}
		return p.Play(req, id, next)
	}
}

// accepts reports whether p takes story id.
func accepts(p any, id string) bool {
	c, ok := p.(StoryChecker)
	return !ok || c.Story(id)
}
