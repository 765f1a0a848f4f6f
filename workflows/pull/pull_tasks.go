package pull

import (
	"fmt"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// checksTask is the task of a round that fixes failing checks: their
// names, links and the end of their output.
func checksTask(c contract.ChecksSummary) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("# Failing checks on the pull request\n\nThese checks failed on the branch's head %s. Find out why, fix the code (not the checks), run the same checks here, and commit.\n", contract.ShortSHA(c.Head)))
	for _, f := range c.Failed {
		b.WriteString(fmt.Sprintf("\n## %s: %s\n\n", f.Name, f.Conclusion))
		if f.URL != "" {
			b.WriteString(fmt.Sprintf("%s\n\n", f.URL))
		}
		if out := strings.TrimSpace(f.Output); out != "" {
			fence := strings.Repeat("`", max(3, longestBackticks(out)+1))
			b.WriteString(fmt.Sprintf("The end of its output:\n\n%s\n%s\n%s\n", fence, out, fence))
		} else {
			b.WriteString("It printed nothing the loop could read.\n")
		}
	}
	return b.String()
}

// reviewTask is the task of a round that answers reviews: each comment
// with its author, and for an inline one its file, line and hunk.
func reviewTask(feedback []contract.Feedback) string {
	var b strings.Builder
	b.WriteString("# Review comments on the pull request\n\nPeople with write access to the repository commented on the pull request. Address each comment in the code (or, where it is a question, answer it in your summary), run the checks and commit.\n")
	for i, fb := range feedback {
		b.WriteString(fmt.Sprintf("\n## %d. @%s, %s", i+1, fb.Author, contract.FeedbackNoun(fb.Kind)))
		if fb.State != "" {
			b.WriteString(fmt.Sprintf(" (%s)", strings.ToLower(strings.ReplaceAll(fb.State, "_", " "))))
		}
		if fb.Path != "" {
			b.WriteString(fmt.Sprintf(" on `%s` line %d", fb.Path, fb.Line))
		}
		b.WriteString("\n\n")
		if fb.DiffHunk != "" {
			fence := strings.Repeat("`", max(3, longestBackticks(fb.DiffHunk)+1))
			b.WriteString(fmt.Sprintf("%sdiff\n%s\n%s\n\n", fence, strings.TrimRight(fb.DiffHunk, "\n"), fence))
		}
		b.WriteString(fmt.Sprintf("%s\n", flow.Quote(fb.Body)))
	}
	return b.String()
}

// updateTask is the task of a round that brings base in.
func updateTask(base string) string {
	return fmt.Sprintf("# The branch conflicts with `%s`\n\n`%s` moved on and the pull request cannot be merged. The loop merged it into this branch (or rebased the branch on it); where `git status` shows conflicts, resolve them keeping what both sides meant, run the checks and commit the merge. Never drop a change of `%s` or of this branch to make the conflict go away.\n", base, base, base)
}

// longestBackticks is the longest run of backticks in s.
func longestBackticks(s string) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
