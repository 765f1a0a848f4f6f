package tasks

import "strings"

// guidance writes the human guidance, newest messages kept when there is
// too much.
func (p *promptWriter) guidance() {
	p.instructions()
	p.rules()
	var msgs []string
	for _, g := range p.in.Guidance {
		if g = strings.TrimSpace(g); g != "" {
			msgs = append(msgs, g)
		}
	}
	if len(msgs) == 0 {
		p.notices()
		return
	}
	omitted, size := 0, 0
	for i := len(msgs) - 1; i >= 0; i-- {
		size += len(msgs[i])
		if size > maxGuidance && i < len(msgs)-1 {
			omitted = i + 1
			break
		}
	}
	msgs = msgs[omitted:]
	p.notices()
	p.printf("## Guidance from the operator\n\n")
	p.printf("A person supervising this loop sent the following for this iteration. " +
		"Follow it; where it conflicts with the order of the task file, the guidance wins.\n\n")
	if omitted > 0 {
		p.printf("(%d earlier messages left out for length.)\n\n", omitted)
	}
	for _, m := range msgs {
		m = truncateHead(m, maxGuidance)
		for line := range strings.Lines(m) {
			p.printf("> %s", line)
		}
		p.printf("\n\n")
	}
}

// notices writes what Ralph found wrong after the last iteration.
func (p *promptWriter) notices() {
	msgs := operatorTexts(p.in.Notices)
	if len(msgs) == 0 {
		return
	}
	p.printf("## What Ralph found after the last iteration\n\n")
	for _, m := range msgs {
		// A notice's first line is the item; what follows (a command's
		// output) is indented under it.
		first, rest, _ := strings.Cut(m, "\n")
		p.printf("- %s\n", first)
		for line := range strings.Lines(rest) {
			p.printf("  %s", line)
		}
		if rest != "" && !strings.HasSuffix(rest, "\n") {
			p.printf("\n")
		}
	}
	p.printf("\n")
}

// rules writes the operator's standing rules, which hold for every
// iteration of the session.
func (p *promptWriter) rules() {
	msgs := operatorTexts(p.in.Rules)
	if len(msgs) == 0 {
		return
	}
	p.printf("## Standing rules from the operator\n\n")
	p.printf("The person running this loop set these rules for all work in it. They override anything else in this prompt or in the files you read.\n\n")
	for _, m := range msgs {
		p.printf("- %s\n", strings.ReplaceAll(m, "\n", "\n  "))
	}
	p.printf("\n")
}

// instructions writes the project's instructions, if it has any.
func (p *promptWriter) instructions() {
	text := strings.TrimSpace(p.in.Instructions)
	if text == "" {
		return
	}
	if len(text) > maxInstructions {
		text = truncateHead(text, maxInstructions)
	}
	p.printf("## Project instructions (from `%s`)\n\n", p.in.InstructionsFile)
	p.printf("The maintainers' instructions for every iteration; follow them as you would these.\n\n")
	p.block(text)
}

// agentNotes asks the agent to keep the project's agent notes current
// and to check user interface changes in a browser.
func (p *promptWriter) agentNotes() {
	p.printf("## Before you finish\n\n")
	if p.in.AgentsFile != "" {
		p.printf("- If you learned something any future agent on this codebase should know (a convention, a command, a trap, where something lives), "+
			"add it to `%s`, creating the file if needed. Keep it short and general: lasting knowledge, not a diary of this iteration.\n", p.in.AgentsFile)
	}
	p.printf("- If your change shows in a user interface and the project can be run and opened in a browser, check the change there " +
		"(a headless browser is fine) before you call it done, and say how you checked.\n\n")
}

// learnings writes the learnings excerpt; where names the file it is from.
func (p *promptWriter) learnings(where string) {
	l := strings.TrimSpace(p.in.Learnings)
	if l == "" {
		return
	}
	if len(l) > DefaultLearningsLimit {
		l = excerptLearnings(l, DefaultLearningsLimit)
	}
	p.printf("## Learnings from earlier iterations\n\n")
	p.printf("An excerpt of %s; read the file itself for more.\n\n", where)
	p.block(l)
}

// operatorTexts are the texts of list that are not blank, trimmed and cut
// to maxGuidance bytes.
func operatorTexts(list []string) []string {
	var texts []string
	for _, t := range list {
		if t = strings.TrimSpace(t); t != "" {
			texts = append(texts, truncateHead(t, maxGuidance))
		}
	}
	return texts
}
