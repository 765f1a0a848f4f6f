package tasks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// RoleInput is what the prompts of the reviewer and the planner are built
// from besides the task file.
type RoleInput struct {
	PromptInput
	// RoleInstructions are the role's own instructions (roles.<role>.instructions).
	RoleInstructions string
}

// BuildReviewPrompt assembles the prompt of a reviewer iteration: verify,
// without changing anything, that the work the task file calls done meets
// its acceptance criteria, and end with a verdict.
func BuildReviewPrompt(dir string, in RoleInput) (string, error) {
	st := in.State
	if st.File == "" {
		var err error
		if st, err = Load(dir, in.Mode); err != nil {
			return "", fmt.Errorf("build review prompt: %w", err)
		}
	}
	p := &promptWriter{in: in.PromptInput, st: st}
	p.printf("# Ralph loop: iteration %d, review\n\n", in.Iteration)
	p.printf("## Role: reviewer\n\n")
	p.printf("You are the reviewer of an autonomous coding loop (a \"Ralph loop\"). Other agents wrote the code in this repository, one iteration at a time, " +
		"and recorded their progress in the task file. You did not write it: judge it as a careful colleague would, from the repository as it is.\n\n")
	p.roleInstructions(in.RoleInstructions)
	p.guidance()
	p.printf("## What to review\n\n")
	p.printf("`%s` says %d of %d %s done. For each one marked done, check its acceptance criteria against the code: read the code and the git history (`git log`, `git show`), "+
		"and run the project's checks (build, typecheck, tests, linters) where a criterion calls for them.\n\n", st.File, st.Done, st.Total, words.Plural(st.Total, "story or task", "stories or tasks"))
	if data, err := readTaskFile(dir, st.File); err == nil {
		s := string(data)
		if len(s) > maxTaskContent {
			s = truncateHead(s, maxTaskContent)
		}
		p.printf("## `%s`\n\n", st.File)
		p.block(s)
	}
	p.printf("## Rules of the review\n\n")
	p.printf("- Do not change anything: no edits, no new files, no commits, no git commands that move a branch. " +
		"Ralph compares the working tree and HEAD before and after your run; any change fails the review and is thrown away.\n")
	p.printf("- Checks that write build output the project ignores (`.gitignore`) are fine.\n")
	p.printf("- Judge only what the task file asks for. Style you would have written otherwise is not a failure.\n\n")
	p.printf("## Your verdict\n\n")
	p.printf("End your reply with the verdict on a line of its own, then nothing but the reasons:\n\n")
	p.printf("- `<verdict>pass</verdict>` when every acceptance criterion of every story or task marked done holds;\n")
	p.printf("- `<verdict>fail</verdict>` otherwise, followed by one line per problem, naming the story or task and the criterion that does not hold and what you saw. " +
		"The next iteration of the loop gets these lines as its instructions, so make each one something an agent can act on.\n")
	return p.String(), nil
}

// verdictRE matches a verdict tag.
var verdictRE = regexp.MustCompile(`(?i)<verdict>\s*(pass|fail)\s*</verdict>`)

// ParseVerdict reads the reviewer's verdict from its final text: the last
// verdict tag, and the reasons written after it (or, when there are none,
// before it). ok is false when the text has no verdict tag.
func ParseVerdict(text string) (verdict, reasons string, ok bool) {
	all := verdictRE.FindAllStringSubmatchIndex(text, -1)
	if len(all) == 0 {
		return "", "", false
	}
	m := all[len(all)-1]
	verdict = strings.ToLower(text[m[2]:m[3]])
	reasons = strings.TrimSpace(text[m[1]:])
	if reasons == "" {
		reasons = strings.TrimSpace(text[:m[0]])
	}
	return verdict, truncateHead(reasons, 4<<10), true
}

// PlanInput is what the prompt of a planner iteration is built from.
type PlanInput struct {
	RoleInput
	// Idea is what to plan: a sentence or a whole document.
	Idea string
	// Feedback is why the last plan was not taken: the validation error
	// of the file it wrote, or a person's reason to reject it.
	Feedback string
}

// maxIdea bounds the idea shown in a planner prompt.
const maxIdea = 32 << 10

// BuildPlanPrompt assembles the prompt of a planner iteration: turn the
// idea into prd.json user stories (or extend the prd.json there is), and
// write nothing else.
func BuildPlanPrompt(dir string, in PlanInput) string {
	p := &promptWriter{in: in.PromptInput}
	p.printf("# Ralph loop: planning\n\n")
	p.printf("## Role: planner\n\n")
	p.printf("You are the planner of an autonomous coding loop (a \"Ralph loop\"). After you, agents implement the plan one story per iteration, " +
		"each a fresh process that knows only the repository and `prd.json`. Your job is that plan: `prd.json`, and nothing else. Do not implement anything.\n\n")
	p.roleInstructions(in.RoleInstructions)
	p.guidance()
	p.printf("## The idea\n\n")
	p.block(truncateHead(in.Idea, maxIdea))
	if fb := strings.TrimSpace(in.Feedback); fb != "" {
		p.printf("## Why your last plan was not taken\n\n")
		p.printf("Revise `prd.json` to answer this:\n\n")
		p.block(fb)
	}
	if data, err := readTaskFile(dir, contract.PRDFile); err == nil {
		p.printf("## `prd.json` as it is\n\n")
		p.printf("Extend or revise it: keep the stories that are there with their ids and `passes`, unless the idea or the feedback above says otherwise.\n\n")
		p.block(truncateHead(string(data), maxTaskContent))
	}
	p.printf("## How to write the plan\n\n")
	p.printf("Look at the repository first (its layout, language, build and test commands) so the stories fit it. Then write `prd.json` in the repository root, in this format:\n\n")
	p.printf("```json\n%s```\n\n", planExample)
	p.printf("- Each story is small: one agent finishes it in one iteration, in one context window. Split anything bigger.\n")
	p.printf("- `priority` orders the work from 1: a story comes after the stories it needs.\n")
	p.printf("- `acceptanceCriteria` are checks anyone can verify, not wishes; every story has `%s` among them (and `Tests pass` where there are tests).\n", TypecheckCriterion)
	p.printf("- New stories have `\"passes\": false` and empty `notes`; ids are `US-001`, `US-002`, … and unique.\n")
	p.printf("- `branchName` is `ralph/` followed by a short kebab-case name of the feature.\n\n")
	p.printf("Ralph checks the file when you are done and commits it; do not commit. End your reply with a short summary of the plan.\n")
	return p.String()
}

// TypecheckCriterion is the acceptance criterion every planned story has.
const TypecheckCriterion = "Typecheck passes"

const planExample = `{
  "project": "Widgets",
  "branchName": "ralph/widget-catalogue",
  "description": "A catalogue of widgets users can browse and edit",
  "userStories": [
    {
      "id": "US-001",
      "title": "Store widgets in the database",
      "description": "As a developer I need a widgets table so that the catalogue has somewhere to live.",
      "acceptanceCriteria": ["Migration adds a widgets table with id, name and price", "Typecheck passes"],
      "priority": 1,
      "passes": false,
      "notes": ""
    }
  ]
}
`

// ValidatePlan checks the prd.json of dir as a planner must leave it: a
// valid prd.json (Load) whose stories each have a priority and acceptance
// criteria including TypecheckCriterion. It returns the stories, in
// priority order, for a person to approve.
func ValidatePlan(dir string) (State, []contract.StoryBrief, error) {
	data, err := readTaskFile(dir, contract.PRDFile)
	if err != nil {
		return State{}, nil, err
	}
	st, doc, err := parsePRD(contract.PRDFile, data)
	if err != nil {
		return State{}, nil, err
	}
	var problems []string
	briefs := make([]contract.StoryBrief, 0, len(doc.UserStories))
	for i, s := range doc.UserStories {
		id := strings.TrimSpace(s.ID)
		if s.Priority < 1 {
			problems = append(problems, fmt.Sprintf("userStories[%d] (%s): \"priority\" must be 1 or more", i, id))
		}
		var criteria []string
		typecheck := false
		for _, c := range s.AcceptanceCriteria {
			if c = strings.TrimSpace(c); c != "" {
				criteria = append(criteria, c)
				typecheck = typecheck || strings.Contains(strings.ToLower(c), "typecheck")
			}
		}
		switch {
		case len(criteria) == 0:
			problems = append(problems, fmt.Sprintf("userStories[%d] (%s): no \"acceptanceCriteria\"", i, id))
		case !typecheck:
			problems = append(problems, fmt.Sprintf("userStories[%d] (%s): \"acceptanceCriteria\" lacks %q", i, id, TypecheckCriterion))
		}
		briefs = append(briefs, contract.StoryBrief{ID: id, Title: strings.TrimSpace(s.Title), Priority: s.Priority, Passes: s.Passes, Criteria: criteria})
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10:10], fmt.Sprintf("and %d more", len(problems)-10))
		}
		return State{}, nil, &FileError{File: contract.PRDFile, Err: errors.New(strings.Join(problems, "; "))}
	}
	sortBriefs(briefs)
	return st, briefs, nil
}

// sortBriefs orders stories by priority, keeping the file's order among
// equals.
func sortBriefs(b []contract.StoryBrief) {
	for i := 1; i < len(b); i++ {
		for j := i; j > 0 && b[j].Priority < b[j-1].Priority; j-- {
			b[j], b[j-1] = b[j-1], b[j]
		}
	}
}

// LoadIdea reads an idea from a file, for `starter plan --from FILE`.
func LoadIdea(path string) (string, error) {
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return "", fmt.Errorf("read the idea: %w", err)
	}
	if len(data) > maxIdea {
		return "", fmt.Errorf("the idea in %s is %d bytes; at most %d fit a prompt", path, len(data), maxIdea)
	}
	return string(data), nil
}

// roleInstructions writes the role's own instructions, if any.
func (p *promptWriter) roleInstructions(text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	p.printf("## Instructions for this role\n\n")
	p.block(truncateHead(text, maxInstructions))
}
