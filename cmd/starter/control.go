package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/contract"
)

// stopCommand is `starter stop`.
type stopCommand struct {
	targeted
	reason string
}

func (s *stopCommand) flags(f *pflag.FlagSet) {
	s.targeted.flags(f)
	f.StringVar(&s.reason, "reason", "", "why the session is stopped (recorded in its result)")
}

func (s *stopCommand) run(cctx *commandContext, args []string) error {
	return cctx.withTarget(s.cmd, s.queue, args, func(conn *connection, id string) error {
		stop := contract.StopSignal{Reason: s.reason}
		err := conn.client.SignalWorkflow(cctx, id, "", contract.SignalStop, stop)
		if _, ok := errors.AsType[*serviceerror.NotFound](err); ok && !isPullID(id) {
			// An issue's session that has ended: stop following its pull
			// request, if that runs.
			if conn.client.SignalWorkflow(cctx, contract.PullRequestID(id), "", contract.SignalStop, stop) == nil {
				id, err = contract.PullRequestID(id), nil
			}
		}
		if err != nil {
			return fmt.Errorf("stop session %s: %w", id, err)
		}
		what := "iteration"
		switch {
		case isQueueID(id):
			what = "issue"
		case isPullID(id):
			what = "round, if one runs, and no longer follows the pull request"
		}
		fmt.Fprintf(cctx.stdout, "Stop requested for %s: it ends after the current %s.\n", id, what)
		return nil
	})
}

// respondCommand is `starter respond`.
type respondCommand struct {
	base
	approve, reject            bool
	answer, reason, checkpoint string
}

func (s *respondCommand) flags(f *pflag.FlagSet) {
	f.BoolVar(&s.approve, "approve", false, "approve")
	f.BoolVar(&s.reject, "reject", false, "reject (give the reason with --reason)")
	f.StringVar(&s.answer, "answer", "", "a free-text answer")
	f.StringVar(&s.reason, "reason", "", "why; reaches the agent's next prompt")
	f.StringVar(&s.checkpoint, "checkpoint", "", "the checkpoint ID being answered (default: the pending one)")
}

func (s *respondCommand) run(cctx *commandContext, args []string) error {
	n := 0
	for _, set := range []bool{s.approve, s.reject, s.answer != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("give exactly one of --approve, --reject or --answer TEXT")
	}
	return cctx.withTarget(s.cmd, queueFlag{}, args, func(conn *connection, id string) error {
		checkpoint := s.checkpoint
		if checkpoint == "" {
			st, err := query[contract.Status](cctx, conn.client, cctx.waitingForWorker, id)
			if err != nil {
				return cctx.noAnswer(conn, err, "")
			}
			if st.Pending == nil {
				return fmt.Errorf("session %s is not waiting on a checkpoint (state %s)", id, st.State)
			}
			checkpoint = st.Pending.ID
			fmt.Fprintf(cctx.stdout, "Answering %s: %s\n", checkpoint, st.Pending.Question)
		}
		ans := contract.Answer{ID: checkpoint, Approve: s.approve, Reject: s.reject, Answer: s.answer, Reason: s.reason,
			By: currentUser(), Via: "starter respond"}
		res, err := update[contract.RespondResult](cctx, conn.client, id, contract.UpdateRespond, ans, "answer "+checkpoint+" of")
		if err != nil {
			return err
		}
		fmt.Fprintln(cctx.stdout, res.Message)
		return nil
	})
}

// update sends the update name with arg to the workflow id and waits for
// its result; what says what it does in an error ("set limits of").
func update[T any](ctx context.Context, c client.Client, id, name string, arg any, what string) (T, error) {
	var res T
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateName:   name,
		Args:         []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		return res, fmt.Errorf("%s %s: %w", what, id, err)
	}
	return res, nil
}

// query asks the workflow id's status query, waiting out a worker's
// handover (ask; waiting may be nil); T is contract.Status for a session,
// contract.QueueStatus for a queue, contract.FollowStatus for the
// follower of a pull request.
func query[T any](ctx context.Context, c client.Client, waiting func(), id string) (T, error) {
	var st T
	v, err := ask(ctx, c, waiting, id, "", contract.QueryStatus)
	if err != nil {
		return st, fmt.Errorf("query status of %s: %w", id, err)
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("decode status of %s: %w", id, err)
	}
	return st, nil
}

// guideCommand is `starter guide`.
type guideCommand struct {
	targeted
	withdraw bool
}

func (s *guideCommand) flags(f *pflag.FlagSet) {
	s.targeted.flags(f)
	f.BoolVar(&s.withdraw, "withdraw", false, "withdraw the queue's standing guidance TEXT (or number N)")
}

func (s *guideCommand) run(cctx *commandContext, args []string) error {
	text := args[len(args)-1]
	if strings.TrimSpace(text) == "" {
		return errors.New("the guidance text is empty")
	}
	if len(text) > contract.MessageLimit && !s.withdraw {
		return fmt.Errorf("the guidance text is %d bytes; at most %d (16 KiB) are taken: put the rest in a file of the workspace and point to it", len(text), contract.MessageLimit)
	}
	return cctx.withTarget(s.cmd, s.queue, args[:len(args)-1], func(conn *connection, id string) error {
		if s.withdraw {
			if !isQueueID(id) {
				return fmt.Errorf("--withdraw is for issue queues; %s is a session, whose guidance goes to one prompt only", id)
			}
			if err := conn.client.SignalWorkflow(cctx, id, "", contract.SignalWithdraw, text); err != nil {
				return fmt.Errorf("withdraw guidance of %s: %w", id, err)
			}
			fmt.Fprintf(cctx.stdout, "Withdrawal of %q sent to %s: later issues no longer get it (see status).\n", text, id)
			return nil
		}
		if err := conn.client.SignalWorkflow(cctx, id, "", contract.SignalGuide, text); err != nil {
			return fmt.Errorf("guide %s: %w", id, err)
		}
		if isQueueID(id) {
			fmt.Fprintf(cctx.stdout, "Guidance sent to %s: every later issue's prompt carries it until withdrawn (guide --withdraw).\n", id)
		} else {
			fmt.Fprintf(cctx.stdout, "Guidance sent to %s: the next iteration's prompt carries it.\n", id)
		}
		return nil
	})
}

// signalCommand is a command that sends a signal without payload: pause,
// resume and poke.
type signalCommand struct {
	targeted
	// signal is the signal the command sends; done says what it did.
	signal, done string
}

func (s *signalCommand) run(cctx *commandContext, args []string) error {
	return cctx.withTarget(s.cmd, s.queue, args, func(conn *connection, id string) error {
		if err := conn.client.SignalWorkflow(cctx, id, "", s.signal, nil); err != nil {
			return fmt.Errorf("%s %s: %w", s.signal, id, err)
		}
		fmt.Fprintf(cctx.stdout, "%s: %s\n", id, s.done)
		return nil
	})
}

// setLimitsCommand is `starter set-limits`.
type setLimitsCommand struct {
	targeted
	maxIterations int
	maxRuntime    time.Duration
	maxCost       float64
	maxCostPerDay float64
}

func (s *setLimitsCommand) flags(f *pflag.FlagSet) {
	s.targeted.flags(f)
	f.IntVar(&s.maxIterations, "max-iterations", 0, "the session's new iteration limit")
	f.DurationVar(&s.maxRuntime, "max-runtime", 0, "the session's new wall-clock limit, such as 6h")
	f.Float64Var(&s.maxCost, "max-cost", 0, "the new cost limit in US dollars (with --queue: of all the queue's issues)")
	f.Float64Var(&s.maxCostPerDay, "max-cost-per-day", 0, "with --queue: the queue's new daily budget in US dollars (wakes a queue in budget_wait)")
}

func (s *setLimitsCommand) run(cctx *commandContext, args []string) error {
	req, err := s.request()
	if err != nil {
		return err
	}
	return cctx.withTarget(s.cmd, s.queue, args, func(conn *connection, id string) error {
		if s.queue.dir != "" {
			l, err := update[contract.SetLimitsRequest](cctx, conn.client, id, contract.UpdateSetLimits, req, "set limits of")
			if err != nil {
				return err
			}
			fmt.Fprintf(cctx.stdout, "%s: max cost %s, max cost per day %s\n", id, dollars(l.MaxCostUSD), dollars(l.MaxCostPerDay))
			return nil
		}
		l, err := update[contract.Limits](cctx, conn.client, id, contract.UpdateSetLimits, req, "set limits of")
		if err != nil {
			return err
		}
		fmt.Fprintf(cctx.stdout, "%s: max iterations %d, max runtime %s, max cost %s\n", id, l.MaxIterations, orNone(l.MaxRuntime), dollars(l.MaxCostUSD))
		return nil
	})
}

// request is the set-limits update of the flags given.
func (s *setLimitsCommand) request() (contract.SetLimitsRequest, error) {
	var req contract.SetLimitsRequest
	changed := s.cmd.Flags().Changed
	if changed("max-iterations") {
		if s.maxIterations < 1 {
			return req, fmt.Errorf("invalid --max-iterations %d: must be at least 1", s.maxIterations)
		}
		req.MaxIterations = s.maxIterations
	}
	if changed("max-runtime") {
		if s.maxRuntime <= 0 {
			return req, fmt.Errorf("invalid --max-runtime %s: must be positive", s.maxRuntime)
		}
		req.MaxRuntime = s.maxRuntime
	}
	if changed("max-cost") {
		if s.maxCost <= 0 {
			return req, fmt.Errorf("invalid --max-cost %g: must be positive", s.maxCost)
		}
		req.MaxCostUSD = s.maxCost
	}
	if changed("max-cost-per-day") {
		if s.maxCostPerDay <= 0 || s.queue.dir == "" {
			return req, fmt.Errorf("invalid --max-cost-per-day %g: must be positive, and a queue's (--queue DIR)", s.maxCostPerDay)
		}
		req.MaxCostPerDay = s.maxCostPerDay
	}
	if req == (contract.SetLimitsRequest{}) {
		return req, errors.New("give at least one of --max-iterations, --max-runtime, --max-cost (--max-cost-per-day with --queue)")
	}
	return req, nil
}

// dollars is a cost limit as set: cents at least ($80.00), every digit
// given below them ($0.0001); none for 0.
func dollars(v float64) string {
	if v == 0 {
		return "none"
	}
	whole, frac, _ := strings.Cut(strconv.FormatFloat(v, 'f', -1, 64), ".")
	if len(frac) < 2 {
		frac += strings.Repeat("0", 2-len(frac))
	}
	return "$" + whole + "." + frac
}

func orNone(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}

// currentUser is the name of the person running the starter, for the
// answers they give; "" when the system does not say.
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}
