package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"
	"golang.org/x/term"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// termWidth is the width of the terminal out writes to: $COLUMNS, the
// terminal's own, or 100.
func termWidth(out io.Writer) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("COLUMNS"), &n); err == nil && n > 20 {
		return n
	}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			return w
		}
	}
	return 100
}

// runningIteration finds the running iteration among a session's pending
// activities and decodes the progress its last heartbeat carried.
func runningIteration(dc converter.DataConverter, pending []*workflowpb.PendingActivityInfo) (*workflowpb.PendingActivityInfo, contract.Progress, bool) {
	for _, pa := range pending {
		if pa.GetActivityType().GetName() != contract.ActivityRunIteration {
			continue
		}
		var p contract.Progress
		if pa.GetHeartbeatDetails() == nil || dc.FromPayloads(pa.GetHeartbeatDetails(), &p) != nil {
			return pa, p, false
		}
		return pa, p, true
	}
	return nil, contract.Progress{}, false
}

// liveLine is one line of the live view.
func liveLine(start time.Time, e contract.LiveEvent) string {
	return "  " + e.Line(start)
}

// liveTail is the running iteration's live view for status: what its last
// heartbeat says, or "" when no iteration runs.
func liveTail(dc converter.DataConverter, pending []*workflowpb.PendingActivityInfo, width int) string {
	pa, p, ok := runningIteration(dc, pending)
	if pa == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Running iteration (attempt %d", pa.GetAttempt())
	if ok && !p.StartedAt.IsZero() {
		fmt.Fprintf(&b, ", %s: %s", contract.Elapsed(p.StartedAt, p.UpdatedAt), soFar(p))
	}
	b.WriteString("):\n")
	if !ok || len(p.Live) == 0 {
		b.WriteString("  (nothing reported yet)\n")
		return b.String()
	}
	for _, e := range p.Live {
		b.WriteString(elide(liveLine(p.StartedAt, e), width))
		b.WriteByte('\n')
	}
	return b.String()
}

// soFar says how far the agent got: turns, tokens and cost.
func soFar(p contract.Progress) string {
	s := words.Count(p.Turns, "turn")
	if t := p.Usage.Total(); t > 0 {
		s += ", " + words.Count(int(t), "token")
	}
	if p.CostUSD > 0 {
		s += ", " + words.Dollars(p.CostUSD)
	}
	if p.LastTool != "" {
		s += ", last tool " + p.LastTool
	}
	return s + " so far"
}

// elide cuts s to width columns (runes), ending in "…".
func elide(s string, width int) string {
	if width <= 1 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
