package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/durable-ralph/ralph/tasks"
)

// typecheck is the acceptance criterion Durable Ralph requires of every
// planned story (tasks.TypecheckCriterion).
const typecheck = "Typecheck passes"

// rejectedPrefix starts the feedback of a planner whose plan a person
// rejected; the reason follows it.
const rejectedPrefix = "A person read the plan and rejected it: "

// maxPlannedStories bounds the stories the fake planner makes of an idea.
const maxPlannedStories = 5

// autoPlan is the planner's unit of work: prd.json made of the idea in
// the prompt (a story per clause of it), or the prd.json there is
// extended with the clauses it lacks; a person's reason to reject the
// last plan becomes a story of its own. Every story gets the typecheck
// criterion, so that the plan passes Ralph's checks.
func (a *invocation) autoPlan() (work, error) {
	idea := strings.TrimSpace(section(a.prompt, "The idea"))
	if idea == "" {
		return work{}, errors.New("auto: the planner prompt has no idea")
	}
	p, existed, err := readPlan(filepath.Join(a.workspace, "prd.json"))
	if err != nil {
		return work{}, fmt.Errorf("auto: %w", err)
	}
	if !existed {
		p = tasks.PRD{Project: projectName(a.workspace), BranchName: "ralph/" + kebab(idea), Description: oneLine(idea)}
	}
	added := 0
	add := func(title string) {
		for _, s := range p.UserStories {
			if strings.EqualFold(s.Title, title) {
				return
			}
		}
		n := len(p.UserStories) + 1
		p.UserStories = append(p.UserStories, tasks.PRDStory{
			ID:                 fmt.Sprintf("US-%03d", n),
			Title:              title,
			Description:        "As a user I want this: " + strings.ToLower(title[:1]) + title[1:] + ".",
			AcceptanceCriteria: []string{title + " works as described", typecheck},
			Priority:           n,
		})
		added++
	}
	for _, c := range clauses(idea) {
		add(c)
	}
	if reason, ok := strings.CutPrefix(strings.TrimSpace(section(a.prompt, "Why your last plan was not taken")), rejectedPrefix); ok {
		add(capitalize(clip(oneLine(reason), 72)))
	}
	for i := range p.UserStories {
		if !hasTypecheck(p.UserStories[i].AcceptanceCriteria) {
			p.UserStories[i].AcceptanceCriteria = append(p.UserStories[i].AcceptanceCriteria, typecheck)
		}
		if p.UserStories[i].Priority < 1 {
			p.UserStories[i].Priority = i + 1
		}
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return work{}, fmt.Errorf("auto: encode prd.json: %w", err)
	}
	verb := "Planned"
	if existed {
		verb = "Revised the plan:"
	}
	return work{
		intro:   "I'll turn the idea into user stories in prd.json.",
		actions: []action{{path: "prd.json", content: string(data) + "\n"}},
		summary: fmt.Sprintf("%s %d %s in prd.json (%d new), each with %q among its acceptance criteria.",
			verb, len(p.UserStories), plural(len(p.UserStories), "story", "stories"), added, typecheck),
	}, nil
}

// autoReview is the reviewer's unit of work: it changes nothing and
// passes the work.
func (a *invocation) autoReview() (work, error) {
	return work{
		summary: "I checked each story marked done against its acceptance criteria; they hold.\n\n<verdict>pass</verdict>\n" +
			"Every acceptance criterion of the work marked done holds (fake reviewer).",
	}, nil
}

// readPlan reads the prd.json at path, if there is one.
func readPlan(path string) (tasks.PRD, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return tasks.PRD{}, false, nil
	}
	if err != nil {
		return tasks.PRD{}, false, err
	}
	var p tasks.PRD
	if err := json.Unmarshal(data, &p); err != nil {
		return tasks.PRD{}, false, fmt.Errorf("prd.json: %w", err)
	}
	return p, true, nil
}

// section is the text of the fenced block under the prompt's heading
// "## name", or "" when there is none.
func section(prompt, name string) string {
	_, rest, ok := strings.Cut(prompt, "\n## "+name+"\n")
	if !ok {
		return ""
	}
	if next := strings.Index(rest, "\n## "); next >= 0 {
		rest = rest[:next]
	}
	lines := strings.Split(rest, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "```") {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if lines[j] == l {
				return strings.Join(lines[i+1:j], "\n")
			}
		}
	}
	return ""
}

// clauseSep splits an idea into its parts.
var clauseSep = regexp.MustCompile(`(?i)[,;.\n]+|\s+(?:and|with|plus)\s+`)

// clauses are the parts of an idea, each a story title.
func clauses(idea string) []string {
	var out []string
	for _, c := range clauseSep.Split(idea, -1) {
		c = strings.TrimSpace(c)
		for _, lead := range []string{"and ", "with ", "plus "} {
			c = strings.TrimSpace(strings.TrimPrefix(c, lead))
		}
		if len(c) < 3 {
			continue
		}
		out = append(out, capitalize(clip(c, 72)))
		if len(out) == maxPlannedStories {
			break
		}
	}
	if len(out) == 0 {
		out = append(out, capitalize(clip(oneLine(idea), 72)))
	}
	return out
}

// hasTypecheck reports whether criteria include a typecheck.
func hasTypecheck(criteria []string) bool {
	for _, c := range criteria {
		if strings.Contains(strings.ToLower(c), "typecheck") {
			return true
		}
	}
	return false
}

// projectName is the name of the project in dir: the directory's.
func projectName(dir string) string {
	return filepath.Base(dir)
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// kebab is a branch name of at most four words of s.
func kebab(s string) string {
	words := strings.Fields(strings.Trim(nonWord.ReplaceAllString(strings.ToLower(s), " "), " "))
	if len(words) > 4 {
		words = words[:4]
	}
	if len(words) == 0 {
		return "plan"
	}
	return strings.Join(words, "-")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// clip cuts s to at most n bytes, at a space when there is one.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	if i := strings.LastIndexByte(s, ' '); i > n/2 {
		s = s[:i]
	}
	return s
}

// nextStepFile is the file in the state directory whose step the next
// invocation without a role plays instead of its own, once.
const nextStepFile = "next-step.json"

// takeNextStep returns the step of next-step.json and removes the file,
// or reports false when there is none. Of invocations that race for it,
// one gets it.
func (s state) takeNextStep() (step, bool, error) {
	path := filepath.Join(s.dir, nextStepFile)
	taken := fmt.Sprintf("%s.taken-%d", path, os.Getpid())
	if err := os.Rename(path, taken); errors.Is(err, fs.ErrNotExist) {
		return step{}, false, nil
	} else if err != nil {
		return step{}, false, fmt.Errorf("take %s: %w", path, err)
	}
	defer os.Remove(taken)
	data, err := os.ReadFile(taken)
	if err != nil {
		return step{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	var st step
	if err := decodeStrict(data, &st); err != nil {
		return step{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return st, true, nil
}
