package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.yaml.in/yaml/v3"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/changeset"
)

// newChangeSetCmd is `starter change-set`: one change across several
// repositories.
func newChangeSetCmd(cctx *commandContext) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "change-set",
		Short: "Make one change across several repositories: linked pull requests, merged in order, all or none",
		Long: `change-set runs a set file: one change across several GitHub repositories, each worked on as an
issue of its own (opened by the set) with its pull request and follower, in the order the file
gives (a repository after the ones it builds on, side by side where the order does not matter).
Every pull request names the others; the set merges them in its order once all are green and
approved (auto-merge, or change-set merge), and closes them all with a comment saying why when
one fails for good or a person abandons the set.`,
		Args: cobra.NoArgs,
	}
	for _, s := range changeSetCommands() {
		cmd.AddCommand(s.build(cctx))
	}
	return cmd
}

// changeSetCommands are the commands of starter change-set.
func changeSetCommands() []spec {
	return []spec{{
		use:   "run FILE",
		short: "Start the change set FILE describes, or attach to it",
		long: `run starts the change set of the set file FILE (YAML), whose ID is ralph-changeset-<name>;
running it again attaches. A repository with a workspace (a local clone, relative to FILE) is
configured as for starter queue (its ralph.yaml, the flags given here); one without is cloned by
the worker of its host:

  name: greeting
  task: Add a greeting endpoint and show it in the web app.
  auto-merge: true        # merge once every pull request is green and approved
  max-cost: 20            # dollars, for the whole set
  revert-merged: false    # when it rolls back after some merged: revert pull requests for those
  repos:
    - repo: acme/api
      task: Add GET /greeting that returns "hello".
    - repo: acme/web
      workspace: ../web
      after: [acme/api]
      task: Show the greeting from the API on the home page.`,
		args:   cobra.ExactArgs(1),
		groups: queueFlags,
		cmd:    &changeSetRunCommand{},
	}, {
		use:    "status NAME",
		short:  "Show a change set: each repository's state, issue, pull request and checks",
		args:   cobra.ExactArgs(1),
		groups: dialFlags,
		cmd:    &changeSetStatusCommand{},
	}, {
		use:    "merge NAME",
		short:  "Merge a change set once every pull request is green and approved, in its order",
		args:   cobra.ExactArgs(1),
		groups: dialFlags,
		cmd:    &changeSetSignalCommand{signal: contract.SignalChangeSetMerge},
	}, {
		use:    "abandon NAME [WHY...]",
		short:  "Abandon a change set: its work stops and every pull request is closed, saying why",
		args:   cobra.MinimumNArgs(1),
		groups: dialFlags,
		cmd:    &changeSetSignalCommand{signal: contract.SignalChangeSetAbandon},
	}}
}

// setFile is a set file: the spec and the set's own settings.
type setFile struct {
	contract.ChangeSetSpec `yaml:",inline"`
	AutoMerge              *bool   `yaml:"auto-merge"`
	MaxCost                float64 `yaml:"max-cost"`
	RevertMerged           bool    `yaml:"revert-merged"`
}

// loadSetFile reads the set file path: YAML with no key it does not
// know, a valid spec, and each workspace made absolute (relative to the
// file). Errors name the file and the key.
func loadSetFile(path string) (setFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return setFile{}, fmt.Errorf("set file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f setFile
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return setFile{}, fmt.Errorf("set file %s is empty", path)
		}
		return setFile{}, fmt.Errorf("set file %s: %v", path, err)
	}
	if err := f.Validate(); err != nil {
		return setFile{}, fmt.Errorf("set file %s: %w", path, err)
	}
	if f.MaxCost < 0 {
		return setFile{}, fmt.Errorf("set file %s: max-cost: %v is negative", path, f.MaxCost)
	}
	dir := filepath.Dir(path)
	for i := range f.Members {
		m := &f.Members[i]
		if m.Workspace == "" {
			continue // the worker of its host clones it
		}
		if !filepath.IsAbs(m.Workspace) {
			m.Workspace = filepath.Join(dir, m.Workspace)
		}
		if m.Workspace, err = filepath.Abs(m.Workspace); err != nil {
			return setFile{}, fmt.Errorf("set file %s: repos[%d].workspace: %w", path, i, err)
		}
	}
	return f, nil
}

// changeSetRunCommand is `starter change-set run`.
type changeSetRunCommand struct {
	base
	follow bool
}

func (s *changeSetRunCommand) flags(f *pflag.FlagSet) {
	f.BoolVarP(&s.follow, "follow", "f", false, "print the set's story until it ends, then exit 0 when it merged (1 otherwise)")
}

func (s *changeSetRunCommand) run(cctx *commandContext, args []string) error {
	f, err := loadSetFile(args[0])
	if err != nil {
		return err
	}
	in, cfg, err := s.input(cctx, f)
	if err != nil {
		return err
	}
	conn, err := cctx.connectToRun(cfg)
	if err != nil {
		return err
	}
	defer conn.close()
	if err := needToken(conn); err != nil {
		return err
	}
	id := contract.ChangeSetID(f.Name)
	for i, m := range in.Members {
		if err := cctx.queuePreflight(conn, id, m.Session, hostIsHere(s.cmd.Flags(), m.Session.Host)); err != nil {
			return fmt.Errorf("repos[%d] %s: %w", i, f.Members[i].Repo, err)
		}
	}
	_, err = conn.client.ExecuteWorkflow(cctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                cfg.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "Ralph change set " + f.Name,
		StaticDetails:            "Repositories: " + strings.Join(reposOf(f.ChangeSetSpec), ", "),
	}, changeset.ChangeSet, in)
	if err != nil {
		return fmt.Errorf("start change set %s: %w", id, err)
	}
	order := make([]string, 0, len(f.Members))
	for _, i := range f.Order() {
		order = append(order, f.Members[i].Repo)
	}
	fmt.Fprintf(cctx.stdout, "Change set %s: %s (merged in this order)\n", id, strings.Join(order, ", "))
	if !s.follow && !conn.started {
		fmt.Fprintf(cctx.stdout, "Follow it with: starter change-set status %s\n", f.Name)
		return nil
	}
	return cctx.followChangeSet(conn, id)
}

// input is the set's workflow input: each member's clone configured as
// starter queue configures one, with the flags of this command.
func (s *changeSetRunCommand) input(cctx *commandContext, f setFile) (contract.ChangeSetInput, config.Config, error) {
	in := contract.ChangeSetInput{Spec: f.ChangeSetSpec, MaxCostUSD: f.MaxCost, RevertMerged: f.RevertMerged}
	var first config.Config
	for i, m := range f.Members {
		q, cfg, err := s.member(cctx, m)
		if err != nil {
			return in, first, fmt.Errorf("repos[%d] %s: %w", i, m.Repo, err)
		}
		in.Members = append(in.Members, contract.ChangeSetMemberInput{Settings: q.Settings, Session: q.Session})
		if i == 0 {
			first = cfg
			in.AutoMerge = q.Settings.Pull.AutoMerge
			in.PollInterval = q.Settings.PollInterval
		}
	}
	if f.AutoMerge != nil {
		in.AutoMerge = *f.AutoMerge
	}
	return in, first, nil
}

// member is member m's issue settings and session: for a local clone,
// as starter queue makes them for it (its ralph.yaml, trusted, and the
// flags); without one, from the user's configuration and the flags, with
// neither clone nor workspace (the set clones it on its host).
func (s *changeSetRunCommand) member(cctx *commandContext, m contract.ChangeSetMember) (contract.QueueInput, config.Config, error) {
	local := m.Workspace
	if fi, err := os.Stat(local); local != "" && m.Host != "" && (err != nil || !fi.IsDir()) {
		// A clone on another host's machine: its worker works in it, with
		// the user's configuration (its ralph.yaml is not read here).
		fmt.Fprintf(cctx.stderr, "%s: workspace %s is not a directory here; it must be a clone on the worker of host %s\n", m.Repo, m.Workspace, m.Host)
		local = ""
	}
	cfg, err := config.Load(s.cmd.Flags(), local)
	if err == nil && local != "" {
		err = cfg.CheckWorkspaceTrusted()
	}
	if err != nil {
		return contract.QueueInput{}, cfg, err
	}
	cfg.GitHub.Repo = m.Repo
	if m.Host != "" {
		cfg.Worker.HostID = m.Host
	}
	if local != "" {
		q, err := queueInput(cctx, cfg, local)
		return q, cfg, err
	}
	sess, err := issueSession(cfg, ".")
	if err != nil {
		return contract.QueueInput{}, cfg, err
	}
	sess.Workspace = m.Workspace // "": the set clones it on its host
	settings, err := queueSettings(cfg, m.Repo, m.Workspace)
	return contract.QueueInput{Settings: settings, Session: sess}, cfg, err
}

// reposOf are the repositories of spec, as its file lists them.
func reposOf(spec contract.ChangeSetSpec) []string {
	out := make([]string, len(spec.Members))
	for i, m := range spec.Members {
		out[i] = m.Repo
	}
	return out
}

// followChangeSet prints the set's story as it grows until the set
// ends; the exit status is 0 when it merged.
func (cctx *commandContext) followChangeSet(conn *connection, id string) error {
	printed := 0
	for {
		st, err := queryChangeSet(cctx, conn, id)
		if err != nil {
			return err
		}
		for _, line := range st.Story[min(printed, len(st.Story)):] {
			fmt.Fprintln(cctx.stdout, line)
		}
		printed = len(st.Story)
		switch st.State {
		case contract.SetMerged:
			return nil
		case contract.SetFailed, contract.SetAbandoned, contract.SetHalfMerged:
			return &exitError{code: 1, err: fmt.Errorf("change set %s %s: %s", st.Name, st.State, st.Message)}
		}
		select {
		case <-cctx.Done():
			return cctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// queryChangeSet asks the set id for its status (the last one, once it
// ended).
func queryChangeSet(cctx *commandContext, conn *connection, id string) (contract.ChangeSetStatus, error) {
	var st contract.ChangeSetStatus
	v, err := conn.client.QueryWorkflow(cctx, id, "", contract.QueryStatus)
	if err != nil {
		return st, fmt.Errorf("change set %s: %w", id, err)
	}
	return st, v.Get(&st)
}

// changeSetStatusCommand is `starter change-set status`.
type changeSetStatusCommand struct{ base }

func (s *changeSetStatusCommand) run(cctx *commandContext, args []string) error {
	conn, err := cctx.dial(s.cmd)
	if err != nil {
		return err
	}
	defer conn.close()
	st, err := queryChangeSet(cctx, conn, contract.ChangeSetID(args[0]))
	if err != nil {
		return err
	}
	printChangeSet(cctx.stdout, st)
	return nil
}

// printChangeSet writes st as a person reads it.
func printChangeSet(w io.Writer, st contract.ChangeSetStatus) {
	fmt.Fprintf(w, "Change set %s: %s", st.Name, st.State)
	if st.Message != "" {
		fmt.Fprintf(w, " (%s)", st.Message)
	}
	fmt.Fprintf(w, "\nMerge order: %s; cost $%.2f\n", strings.Join(st.Order, ", "), st.CostUSD)
	if st.Origin != "" {
		fmt.Fprintf(w, "From issue %s\n", st.Origin)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPOSITORY\tSTATE\tISSUE\tPULL REQUEST\tCHECKS\tAPPROVED\tAFTER")
	dash := func(n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprintf("#%d", n)
	}
	for _, m := range st.Members {
		approved := "-"
		if m.Pull != 0 {
			approved = fmt.Sprint(m.Approved)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Repo, m.State, dash(m.Issue), dash(m.Pull), orDash(m.Checks), approved, orDash(strings.Join(m.After, ", ")))
	}
	tw.Flush()
	for _, m := range st.Members {
		if m.Message != "" {
			fmt.Fprintf(w, "\n%s: %s", m.Repo, m.Message)
		}
	}
}

// changeSetSignalCommand is `starter change-set merge` and `abandon`.
type changeSetSignalCommand struct {
	base
	signal string
}

func (s *changeSetSignalCommand) run(cctx *commandContext, args []string) error {
	conn, err := cctx.dial(s.cmd)
	if err != nil {
		return err
	}
	defer conn.close()
	id := contract.ChangeSetID(args[0])
	st, err := queryChangeSet(cctx, conn, id)
	if err != nil {
		return err
	}
	switch st.State {
	case contract.SetMerged, contract.SetFailed, contract.SetAbandoned, contract.SetHalfMerged:
		return fmt.Errorf("change set %s ended already (%s): nothing to %s", args[0], st.State, strings.TrimPrefix(s.signal, "change-set-"))
	}
	var arg any
	if s.signal == contract.SignalChangeSetAbandon {
		arg = strings.Join(args[1:], " ")
	}
	if err := conn.client.SignalWorkflow(cctx, id, "", s.signal, arg); err != nil {
		return fmt.Errorf("change set %s: %w", id, err)
	}
	if s.signal == contract.SignalChangeSetMerge {
		fmt.Fprintf(cctx.stdout, "Change set %s merges once every pull request is green and approved (now: %s)\n", args[0], st.State)
	} else {
		fmt.Fprintf(cctx.stdout, "Change set %s is abandoned: its work stops and its pull requests are closed\n", args[0])
	}
	return nil
}
