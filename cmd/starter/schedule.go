package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/schedule"
)

// newScheduleCmd is `starter schedule`: sessions and issue queues run by
// Temporal Schedules.
func newScheduleCmd(cctx *commandContext) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Run a session or an issue queue on a schedule (Temporal Schedules)",
		Long: `schedule runs a starter run or queue command at the times of a Temporal Schedule, which the
Temporal UI shows (Schedules) and can pause, trigger and delete too. Each time it starts the
session (or queue) under the ID it has when started by hand, so status, stop and the other
commands find it; while it runs, the next times are skipped (--overlap).`,
		Args: cobra.NoArgs,
	}
	for _, s := range scheduleCommands() {
		cmd.AddCommand(s.build(cctx))
	}
	return cmd
}

// scheduleCommands are the commands of starter schedule.
func scheduleCommands() []spec {
	return []spec{{
		use:   "add NAME (--cron EXPR | --every DURATION) [--overlap POLICY] -- (run|queue) [ARGS...]",
		short: "Make a schedule that runs a session or an issue queue",
		long: `add makes the schedule NAME, which runs the starter command after -- (run or queue, with its
arguments and flags as you would give them) at the times --cron or --every gives, in UTC.
The command's configuration is read now (its ralph.yaml, the flags): delete and add the
schedule again to change it. A workspace on another host (--host-id) runs there.

  starter schedule add nightly --cron "0 2 * * *" -- run ~/src/app --max-cost 5
  starter schedule add issues --every 30m -- queue ~/src/app --until-idle`,
		args:   cobra.MinimumNArgs(2),
		groups: dialFlags,
		cmd:    &scheduleAddCommand{},
	}, {
		use:    "list",
		short:  "List the schedules: their times, next run and last result",
		args:   cobra.NoArgs,
		groups: dialFlags,
		cmd:    &scheduleListCommand{},
	}, {
		use:    "trigger NAME",
		short:  "Run a schedule's command now",
		args:   cobra.ExactArgs(1),
		groups: dialFlags,
		cmd:    &scheduleActCommand{act: "trigger"},
	}, {
		use:    "pause NAME",
		short:  "Pause a schedule: it runs nothing until resumed",
		args:   cobra.ExactArgs(1),
		groups: dialFlags,
		cmd:    &scheduleActCommand{act: "pause"},
	}, {
		use:    "resume NAME",
		short:  "Resume a paused schedule",
		args:   cobra.ExactArgs(1),
		groups: dialFlags,
		cmd:    &scheduleActCommand{act: "resume"},
	}, {
		use:    "delete NAME",
		short:  "Delete a schedule (what it started runs on)",
		args:   cobra.ExactArgs(1),
		groups: dialFlags,
		cmd:    &scheduleActCommand{act: "delete"},
	}}
}

// scheduleAddCommand is `starter schedule add`.
type scheduleAddCommand struct {
	base
	cron    string
	every   time.Duration
	overlap string
}

// overlapPolicies are the values of --overlap.
var overlapPolicies = map[string]enumspb.ScheduleOverlapPolicy{
	"skip":       enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
	"buffer-one": enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
	"allow-all":  enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL,
}

func (s *scheduleAddCommand) flags(f *pflag.FlagSet) {
	f.StringVar(&s.cron, "cron", "", `when to run, as a cron expression in UTC, such as "0 2 * * *" (02:00 every day) or "@hourly"`)
	f.DurationVar(&s.every, "every", 0, "run every DURATION, such as 30m or 24h")
	f.StringVar(&s.overlap, "overlap", "skip", "when the last run still runs: skip (the default: this time is skipped), buffer-one (run once it ends) or allow-all")
}

func (s *scheduleAddCommand) run(cctx *commandContext, args []string) error {
	dash := s.cmd.ArgsLenAtDash()
	if dash != 1 || len(args) < 2 {
		return errors.New("give the schedule's name, then -- and the command it runs: schedule add NAME --every 1h -- run DIR")
	}
	name, inner := args[0], args[1:]
	if err := contract.ValidScheduleName(name); err != nil {
		return err
	}
	spec, err := s.spec()
	if err != nil {
		return err
	}
	overlap, ok := overlapPolicies[s.overlap]
	if !ok {
		return fmt.Errorf("invalid --overlap %q: skip, buffer-one or allow-all", s.overlap)
	}
	conn, err := cctx.dial(s.cmd)
	if err != nil {
		return err
	}
	defer conn.close()
	in, taskQueue, err := scheduledInput(cctx, name, inner)
	if err != nil {
		return err
	}
	if err := cctx.checkScheduled(conn, in); err != nil {
		return err
	}
	_, err = conn.client.ScheduleClient().Create(cctx, client.ScheduleOptions{
		ID:      contract.ScheduleID(name),
		Spec:    spec,
		Overlap: overlap,
		Action: &client.ScheduleWorkflowAction{
			ID:            contract.ScheduledWorkflowID(name),
			Workflow:      schedule.Scheduled,
			Args:          []any{in},
			TaskQueue:     taskQueue,
			StaticSummary: fmt.Sprintf("schedule %s: %s", name, strings.Join(in.Command, " ")),
		},
		Memo: map[string]any{scheduleCommandMemo: strings.Join(in.Command, " ")},
		Note: "made by starter schedule add",
	})
	var exists *serviceerror.AlreadyExists
	var invalid *serviceerror.InvalidArgument
	switch {
	case errors.As(err, &exists) || errors.Is(err, temporal.ErrScheduleAlreadyRunning):
		return fmt.Errorf("a schedule called %s exists already: delete it first (%s)", name, conn.suggest("schedule delete", name))
	case errors.As(err, &invalid):
		return fmt.Errorf("the schedule's times are refused: %s", invalid.Message)
	case err != nil:
		return fmt.Errorf("make schedule %s: %w", name, err)
	}
	fmt.Fprintf(cctx.stdout, "Schedule %s: %s runs %s (starts %s)\n", name, specText(spec), strings.Join(in.Command, " "), in.WorkflowID)
	if u := conn.uiURL; u != "" {
		fmt.Fprintf(cctx.stdout, "Temporal UI: %s/namespaces/%s/schedules/%s\n", strings.TrimRight(u, "/"), conn.namespace, contract.ScheduleID(name))
	}
	return nil
}

// checkScheduled checks, when the schedule is made, what its runs would
// fail on at once, as run and queue check before they start: the agents
// on the worker of the host (AgentPreflight), and a required sandbox
// and a queue's GitHub token when this process is the worker. A queue
// that runs already is not checked.
func (cctx *commandContext) checkScheduled(conn *connection, in contract.ScheduledInput) error {
	sess := in.Session
	if q := in.Queue; q != nil {
		if err := needToken(conn); err != nil {
			return err
		}
		return cctx.queuePreflight(conn, in.WorkflowID, q.Session, false)
	}
	if conn.started {
		if err := app.NeedSandbox(sess.Agent.Sandbox, app.SandboxProblem); err != nil {
			return err
		}
		return app.LookAgents(app.AgentsOf(*sess))
	}
	return cctx.preflight(conn, sess.Host, app.AgentsOf(*sess), nil)
}

// scheduleCommandMemo is the memo field of a schedule that holds its
// command, for list.
const scheduleCommandMemo = "ralph-command"

// spec is the schedule's times from --cron or --every.
func (s *scheduleAddCommand) spec() (client.ScheduleSpec, error) {
	changed := s.cmd.Flags().Changed
	switch {
	case changed("cron") == changed("every"):
		return client.ScheduleSpec{}, errors.New("give one of --cron EXPR or --every DURATION")
	case changed("every") && s.every < time.Minute:
		return client.ScheduleSpec{}, fmt.Errorf("invalid --every %s: at least 1m", s.every)
	case changed("every"):
		return client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: s.every}}}, nil
	case strings.TrimSpace(s.cron) == "":
		return client.ScheduleSpec{}, errors.New("invalid --cron \"\": give a cron expression such as \"0 2 * * *\"")
	}
	return client.ScheduleSpec{CronExpressions: []string{s.cron}}, nil
}

// specText says when a schedule of spec runs.
func specText(spec client.ScheduleSpec) string {
	var parts []string
	for _, c := range spec.CronExpressions {
		parts = append(parts, fmt.Sprintf("cron %q (UTC)", c))
	}
	for _, iv := range spec.Intervals {
		parts = append(parts, "every "+shortDuration(iv.Every))
	}
	for _, c := range spec.Calendars {
		parts = append(parts, calendarText(c))
	}
	if len(parts) == 0 {
		return "no times"
	}
	return strings.Join(parts, ", ")
}

// calendarText is how a calendar spec of the server (a cron expression
// it parsed) reads.
func calendarText(c client.ScheduleCalendarSpec) string {
	field := func(rs []client.ScheduleRange) string {
		var out []string
		for _, r := range rs {
			switch {
			case r.End > r.Start:
				out = append(out, fmt.Sprintf("%d-%d", r.Start, r.End))
			default:
				out = append(out, fmt.Sprint(r.Start))
			}
		}
		if len(out) == 0 {
			return "*"
		}
		return strings.Join(out, ",")
	}
	return fmt.Sprintf("at %s:%s (UTC)", field(c.Hour), field(c.Minute))
}

// shortDuration is d without its zero units: 1m, 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	return strings.TrimSuffix(s, "0m")
}

// scheduledInput builds the input of the Scheduled workflow that runs
// the starter command inner (run or queue, with its arguments), as that
// command would start it, and the task queue its worker polls.
func scheduledInput(cctx *commandContext, name string, inner []string) (contract.ScheduledInput, string, error) {
	var sp *spec
	for _, s := range startCommands() {
		if strings.HasPrefix(s.use, inner[0]+" ") && (inner[0] == "run" || inner[0] == "queue") {
			sp = &s
		}
	}
	if sp == nil {
		return contract.ScheduledInput{}, "", fmt.Errorf("a schedule runs run or queue, not %q", inner[0])
	}
	cmd := sp.build(cctx)
	cmd.SetFlagErrorFunc(flagError)
	if err := cmd.ParseFlags(inner[1:]); err != nil {
		return contract.ScheduledInput{}, "", fmt.Errorf("%s: %w", inner[0], err)
	}
	for _, f := range []string{"follow", "quiet", "raw", "attach-only"} {
		if fl := cmd.Flags().Lookup(f); fl != nil && fl.Changed {
			return contract.ScheduledInput{}, "", fmt.Errorf("--%s does not apply to a scheduled %s: follow a run with starter status or %s --follow", f, inner[0], inner[0])
		}
	}
	args := cmd.Flags().Args()
	if err := cmd.Args(cmd, args); err != nil {
		return contract.ScheduledInput{}, "", fmt.Errorf("%s: %w", inner[0], err)
	}
	cfg, dir, err := loadToStart(cmd, args)
	if err != nil {
		return contract.ScheduledInput{}, "", err
	}
	in := contract.ScheduledInput{Name: name, Command: inner}
	if inner[0] == "queue" {
		q, err := queueInput(cctx, cfg, dir)
		if err != nil {
			return in, "", err
		}
		if q.Settings.UntilIdle, err = cmd.Flags().GetBool("until-idle"); err != nil {
			return in, "", err
		}
		in.Queue = &q
		r := q.Settings.Repo
		in.WorkflowID = contract.QueueWorkflowID(cfg.Worker.HostID, r.Owner, r.Name)
		in.Summary = "Ralph issue queue of " + r.FullName()
		in.Keywords = append(in.Keywords, contract.Keyword{Name: contract.SearchRalphRepo, Value: r.FullName()})
	} else {
		opts := runOptions{worktree: cmd.Flags().Lookup("worktree").Value.String(), hostHere: hostIsHere(cmd.Flags(), cfg.Worker.HostID)}
		sess, err := cctx.sessionInput(cfg, dir, opts)
		if err != nil {
			return in, "", err
		}
		sess.Scheduled = name
		in.Session = &sess
		in.WorkflowID = contract.SessionWorkflowID(sess.Host, sess.Workspace)
		in.Summary = "Ralph session on " + app.WorkspaceName(sess) + " (schedule " + name + ")"
	}
	if cfg.Worker.HostID != "" {
		in.Keywords = append(in.Keywords, contract.Keyword{Name: contract.SearchRalphHost, Value: cfg.Worker.HostID})
	}
	return in, cfg.TaskQueue, in.Validate()
}

// scheduleListCommand is `starter schedule list`.
type scheduleListCommand struct{ base }

func (s *scheduleListCommand) run(cctx *commandContext, _ []string) error {
	conn, err := cctx.dial(s.cmd)
	if err != nil {
		return err
	}
	defer conn.close()
	it, err := conn.client.ScheduleClient().List(cctx, client.ScheduleListOptions{PageSize: 100})
	if err != nil {
		return fmt.Errorf("list schedules: %w", err)
	}
	tw := tabwriter.NewWriter(cctx.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWHEN\tSTATE\tNEXT RUN\tLAST RUN\tCOMMAND")
	n := 0
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return fmt.Errorf("list schedules: %w", err)
		}
		name, ok := strings.CutPrefix(e.ID, contract.ScheduleID(""))
		if !ok {
			continue
		}
		n++
		state := "active"
		if e.Paused {
			state = "paused"
		}
		next, last := "-", "-"
		if len(e.NextActionTimes) > 0 {
			next = e.NextActionTimes[0].Local().Format(time.DateTime)
		}
		if k := len(e.RecentActions); k > 0 {
			last = e.RecentActions[k-1].ActualTime.Local().Format(time.DateTime)
		}
		command := "-"
		if p, ok := e.Memo.GetFields()[scheduleCommandMemo]; ok {
			_ = conn.dataConverter.FromPayload(p, &command)
		}
		when := "-"
		if e.Spec != nil {
			when = specText(*e.Spec)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, when, state, next, last, command)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n == 0 {
		fmt.Fprintln(cctx.stdout, "No schedules. Make one with: starter schedule add NAME --every 24h -- run DIR")
	}
	return nil
}

// scheduleActCommand is `starter schedule trigger|pause|resume|delete`.
type scheduleActCommand struct {
	base
	act string
}

func (s *scheduleActCommand) run(cctx *commandContext, args []string) error {
	name := args[0]
	if err := contract.ValidScheduleName(name); err != nil {
		return err
	}
	conn, err := cctx.dial(s.cmd)
	if err != nil {
		return err
	}
	defer conn.close()
	h := conn.client.ScheduleClient().GetHandle(cctx, contract.ScheduleID(name))
	switch s.act {
	case "trigger":
		err = h.Trigger(cctx, client.ScheduleTriggerOptions{})
	case "pause":
		err = h.Pause(cctx, client.SchedulePauseOptions{Note: "paused with starter schedule pause"})
	case "resume":
		err = h.Unpause(cctx, client.ScheduleUnpauseOptions{Note: "resumed with starter schedule resume"})
	case "delete":
		err = h.Delete(cctx)
	}
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return fmt.Errorf("no schedule called %s (%s lists them)", name, conn.suggest("schedule list"))
	case err != nil:
		return fmt.Errorf("%s schedule %s: %w", s.act, name, err)
	}
	done := map[string]string{
		"trigger": "triggered: its command runs now (unless its last run still runs and --overlap skips)",
		"pause":   "paused: it runs nothing until resumed",
		"resume":  "resumed",
		"delete":  "deleted (what it started runs on)",
	}[s.act]
	fmt.Fprintf(cctx.stdout, "Schedule %s %s\n", name, done)
	return nil
}
