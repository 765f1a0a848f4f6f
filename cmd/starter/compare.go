package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
)

// compareCommand is `starter compare`.
type compareCommand struct {
	base
	output outputFormat
}

func (s *compareCommand) flags(f *pflag.FlagSet) { s.output.add(f, "both sessions' figures") }

// sessionSide is one session of a comparison, from the iteration the
// two have in common.
type sessionSide struct {
	Session    string  `json:"session"`
	State      string  `json:"state"`
	Branch     string  `json:"branch,omitempty"`
	Model      string  `json:"model,omitempty"`
	Backend    string  `json:"backend,omitempty"`
	Iterations int     `json:"iterations"`
	Stories    string  `json:"stories"`
	CostUSD    float64 `json:"cost_usd"`
	Tokens     int64   `json:"tokens"`
	Failures   int     `json:"failures"`
	Head       string  `json:"head,omitempty"`
	DiffStat   string  `json:"diff_stat,omitempty"`
}

// comparison is what compare prints.
type comparison struct {
	// Common is the iteration both sessions share (0: none), at Commit.
	Common int           `json:"common_iteration"`
	Commit string        `json:"common_commit,omitempty"`
	Sides  []sessionSide `json:"sessions"`
}

func (s *compareCommand) run(cctx *commandContext, args []string) error {
	conn, err := cctx.dial(s.cmd)
	if err != nil {
		return err
	}
	defer conn.close()
	var tls [2]*timeline
	var sts [2]contract.Status
	for i, arg := range args {
		id := sessionID(cctx, conn.client, conn.cfg.Worker.HostID, []string{arg})
		if tls[i], err = readTimeline(cctx, conn, id); err != nil {
			return err
		}
		if sts[i], err = query[contract.Status](cctx, conn.client, cctx.waitingForWorker, id); err != nil {
			return cctx.noAnswer(conn, err, "")
		}
	}
	c := comparison{}
	c.Common, c.Commit = commonPoint(tls, sts)
	for i := range tls {
		c.Sides = append(c.Sides, side(cctx, tls[i], sts[i], c.Common, c.Commit))
	}
	if s.output == outputJSON {
		return newPrinter(cctx.stdout).print(c)
	}
	printComparison(cctx, c)
	return nil
}

// commonPoint is the iteration two sessions share, and its commit: where
// one was forked from the other, or both from the same session.
func commonPoint(tls [2]*timeline, sts [2]contract.Status) (int, string) {
	a, b := sts[0].ForkedFrom, sts[1].ForkedFrom
	switch {
	case b != nil && b.Session == tls[0].id:
		return b.Iteration, b.Commit
	case a != nil && a.Session == tls[1].id:
		return a.Iteration, a.Commit
	case a != nil && b != nil && a.Session == b.Session && a.Iteration == b.Iteration:
		return a.Iteration, a.Commit
	}
	return 0, ""
}

// side is what session tl did after iteration common.
func side(cctx *commandContext, tl *timeline, st contract.Status, common int, commit string) sessionSide {
	sd := sessionSide{Session: tl.id, State: sessionState(st), Branch: st.Branch, Model: tl.input.Agent.Model,
		Backend: tl.input.Agent.Backend, Stories: fmt.Sprintf("%d of %d", st.Task.Done, st.Task.Total)}
	for n := common + 1; n <= tl.last(); n++ {
		it := tl.iterations[n]
		if it == nil {
			continue
		}
		sd.Iterations++
		switch {
		case it.result != nil:
			sd.CostUSD += it.result.CostUSD
			sd.Tokens += it.result.Usage.Total()
			sd.Head = it.result.Head
			if it.result.Outcome != contract.OutcomeSuccess {
				sd.Failures++
			}
		case it.failure != "":
			sd.Failures++
		}
	}
	if commit != "" && sd.Head != "" {
		sd.DiffStat = diffStat(cctx, tl.input.Workspace, commit, sd.Head)
	}
	return sd
}

// diffStat is git's short diff stat of from..to in the workspace, when
// it is on this machine.
func diffStat(cctx *commandContext, workspace, from, to string) string {
	repo, err := git.Open(cctx, workspace)
	if err != nil {
		return ""
	}
	out, err := repo.DiffStat(cctx, from, to)
	if err != nil {
		return ""
	}
	return out
}

func printComparison(cctx *commandContext, c comparison) {
	if c.Common > 0 {
		fmt.Fprintf(cctx.stdout, "From iteration %d (%s), which both share:\n\n", c.Common, contract.ShortSHA(c.Commit))
	} else {
		fmt.Fprintln(cctx.stdout, "The sessions share no iteration (neither is a fork of the other): their whole runs.")
		fmt.Fprintln(cctx.stdout)
	}
	tw := tabwriter.NewWriter(cctx.stdout, 0, 4, 2, ' ', 0)
	a, b := c.Sides[0], c.Sides[1]
	row := func(k string, x, y any) { fmt.Fprintf(tw, "%s\t%v\t%v\n", k, x, y) }
	row("", a.Session, b.Session)
	row("State", a.State, b.State)
	row("Branch", a.Branch, b.Branch)
	row("Agent", agentName(a), agentName(b))
	row("Iterations", a.Iterations, b.Iterations)
	row("Stories done", a.Stories, b.Stories)
	row("Cost", fmt.Sprintf("$%.4f", a.CostUSD), fmt.Sprintf("$%.4f", b.CostUSD))
	row("Tokens", a.Tokens, b.Tokens)
	row("Failures", a.Failures, b.Failures)
	if a.DiffStat != "" || b.DiffStat != "" {
		row("Diff", orDash(a.DiffStat), orDash(b.DiffStat))
	}
	_ = tw.Flush()
}

func agentName(s sessionSide) string {
	b := s.Backend
	if b == "" {
		b = "claude"
	}
	if s.Model != "" {
		return b + " " + s.Model
	}
	return b
}
