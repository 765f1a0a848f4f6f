package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/ralph"
)

// dial loads the configuration and connects. With --dev and no server
// running, it opens the saved state in this process, with a worker that
// runs workflow code only: queries and updates need a worker, and no agent
// may start here. conn.close undoes it all.
func dial(cmd *cobra.Command) (cfg config.Config, conn *connection, started bool, err error) {
	if cfg, err = config.Load(cmd.Flags(), ""); err != nil {
		return cfg, nil, false, err
	}
	conn, started, err = connect(cmd.Context(), cfg, cmd.ErrOrStderr())
	if err != nil || !started {
		return cfg, conn, started, err
	}
	w := ralph.NewWorkflowWorker(conn.client, cfg.TaskQueue)
	if err := w.Start(); err != nil {
		conn.close()
		return cfg, nil, false, fmt.Errorf("start worker: %w", err)
	}
	closeConn := conn.close
	conn.close = func() {
		w.Stop()
		closeConn()
	}
	return cfg, conn, started, nil
}

// withSession dials and calls fn with the session named by args.
func withSession(cmd *cobra.Command, args []string, fn func(ctx context.Context, c client.Client, id string, out io.Writer) error) error {
	cfg, conn, _, err := dial(cmd)
	if err != nil {
		return err
	}
	defer conn.close()
	id, err := targetID(cmd, conn.client, cfg.Worker.HostID, args)
	if err != nil {
		return err
	}
	return fn(cmd.Context(), conn.client, id, cmd.OutOrStdout())
}

// queueDir is the --queue flag: commands act on the issue queue of the
// clone in that directory instead of a session.
var queueDir string

// targetID is the workflow the command acts on: the queue of --queue DIR,
// or the session (or queue) named by args.
func targetID(cmd *cobra.Command, c client.Client, host string, args []string) (string, error) {
	if queueDir != "" {
		if len(args) > 0 {
			return "", errors.New("give either --queue DIR or a session, not both")
		}
		return queueTarget(cmd, c, queueDir)
	}
	return sessionID(cmd.Context(), c, host, args), nil
}

func newRespondCmd() *cobra.Command {
	var approve, reject bool
	var answer, reason, checkpoint string
	cmd := &cobra.Command{
		Use:   "respond [DIR|ID] (--approve | --reject [--reason TEXT] | --answer TEXT) [--checkpoint CP]",
		Short: "Answer the checkpoint a session is waiting on",
		Long: "respond answers the pending checkpoint of a session through the respond update, which the\n" +
			"session validates: an answer to a checkpoint that is not pending is refused. --checkpoint names\n" +
			"the checkpoint you mean (as status shows it); without it, the pending one is answered and named.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, set := range []bool{approve, reject, answer != ""} {
				if set {
					n++
				}
			}
			if n != 1 {
				return errors.New("give exactly one of --approve, --reject or --answer TEXT")
			}
			return withSession(cmd, args, func(ctx context.Context, c client.Client, id string, out io.Writer) error {
				if checkpoint == "" {
					st, err := queryStatus(ctx, c, id)
					if err != nil {
						return err
					}
					if st.Pending == nil {
						return fmt.Errorf("session %s is not waiting on a checkpoint (state %s)", id, st.State)
					}
					checkpoint = st.Pending.ID
					fmt.Fprintf(out, "Answering %s: %s\n", checkpoint, st.Pending.Question)
				}
				res, err := respond(ctx, c, id, contract.Answer{ID: checkpoint, Approve: approve, Reject: reject, Answer: answer, Reason: reason})
				if err != nil {
					return err
				}
				fmt.Fprintln(out, res.Message)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&approve, "approve", false, "approve")
	cmd.Flags().BoolVar(&reject, "reject", false, "reject (give the reason with --reason)")
	cmd.Flags().StringVar(&answer, "answer", "", "a free-text answer")
	cmd.Flags().StringVar(&reason, "reason", "", "why; reaches the agent's next prompt")
	cmd.Flags().StringVar(&checkpoint, "checkpoint", "", "the checkpoint ID being answered (default: the pending one)")
	return cmd
}

func respond(ctx context.Context, c client.Client, id string, ans contract.Answer) (contract.RespondResult, error) {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateName:   contract.UpdateRespond,
		Args:         []any{ans},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return contract.RespondResult{}, fmt.Errorf("answer %s of %s: %w", ans.ID, id, err)
	}
	var res contract.RespondResult
	if err := h.Get(ctx, &res); err != nil {
		return contract.RespondResult{}, fmt.Errorf("answer %s of %s: %w", ans.ID, id, err)
	}
	return res, nil
}

func newGuideCmd() *cobra.Command {
	var withdraw bool
	cmd := &cobra.Command{
		Use:   "guide [DIR|ID] TEXT",
		Short: "Add guidance to the next iteration's prompt (a queue: to every later issue's)",
		Long: "guide sends text to a session's next prompt. Sent to an issue queue (its ID or --queue DIR),\n" +
			"the text is a standing rule for every later issue until withdrawn with --withdraw TEXT|N\n" +
			"(N is its number in status).",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := args[len(args)-1]
			if strings.TrimSpace(text) == "" {
				return errors.New("the guidance text is empty")
			}
			return withSession(cmd, args[:len(args)-1], func(ctx context.Context, c client.Client, id string, out io.Writer) error {
				if withdraw {
					if !isQueueID(id) {
						return fmt.Errorf("--withdraw is for issue queues; %s is a session, whose guidance goes to one prompt only", id)
					}
					if err := c.SignalWorkflow(ctx, id, "", contract.SignalWithdraw, text); err != nil {
						return fmt.Errorf("withdraw guidance of %s: %w", id, err)
					}
					fmt.Fprintf(out, "Withdrawal of %q sent to %s: later issues no longer get it (see status).\n", text, id)
					return nil
				}
				if err := c.SignalWorkflow(ctx, id, "", contract.SignalGuide, text); err != nil {
					return fmt.Errorf("guide %s: %w", id, err)
				}
				if isQueueID(id) {
					fmt.Fprintf(out, "Guidance sent to %s: every later issue's prompt carries it until withdrawn (guide --withdraw).\n", id)
				} else {
					fmt.Fprintf(out, "Guidance sent to %s: the next iteration's prompt carries it.\n", id)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&withdraw, "withdraw", false, "withdraw the queue's standing guidance TEXT (or number N)")
	return cmd
}

func newSignalCmd(name, short, done string) *cobra.Command {
	return &cobra.Command{
		Use:   name + " [DIR|ID]",
		Short: short,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(cmd, args, func(ctx context.Context, c client.Client, id string, out io.Writer) error {
				if err := c.SignalWorkflow(ctx, id, "", name, nil); err != nil {
					return fmt.Errorf("%s %s: %w", name, id, err)
				}
				fmt.Fprintf(out, "%s: %s\n", id, done)
				return nil
			})
		},
	}
}

func newSetLimitsCmd() *cobra.Command {
	var maxIterations int
	var maxRuntime time.Duration
	var maxCost float64
	cmd := &cobra.Command{
		Use:   "set-limits [DIR|ID] [--max-iterations N] [--max-runtime D] [--max-cost USD]",
		Short: "Change a running session's limits",
		Long: "set-limits changes max iterations, runtime or cost of a running session through the set-limits\n" +
			"update. Only the flags given change; a limit below what the session already used is refused.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req contract.SetLimitsRequest
			if cmd.Flags().Changed("max-iterations") {
				if maxIterations < 1 {
					return fmt.Errorf("invalid --max-iterations %d: must be at least 1", maxIterations)
				}
				req.MaxIterations = maxIterations
			}
			if cmd.Flags().Changed("max-runtime") {
				if maxRuntime <= 0 {
					return fmt.Errorf("invalid --max-runtime %s: must be positive", maxRuntime)
				}
				req.MaxRuntime = maxRuntime
			}
			if cmd.Flags().Changed("max-cost") {
				if maxCost <= 0 {
					return fmt.Errorf("invalid --max-cost %g: must be positive", maxCost)
				}
				req.MaxCostUSD = maxCost
			}
			if req == (contract.SetLimitsRequest{}) {
				return errors.New("give at least one of --max-iterations, --max-runtime, --max-cost")
			}
			return withSession(cmd, args, func(ctx context.Context, c client.Client, id string, out io.Writer) error {
				h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
					WorkflowID:   id,
					UpdateName:   contract.UpdateSetLimits,
					Args:         []any{req},
					WaitForStage: client.WorkflowUpdateStageCompleted,
				})
				if err != nil {
					return fmt.Errorf("set limits of %s: %w", id, err)
				}
				var l contract.Limits
				if err := h.Get(ctx, &l); err != nil {
					return fmt.Errorf("set limits of %s: %w", id, err)
				}
				fmt.Fprintf(out, "%s: max iterations %d, max runtime %s, max cost $%.2f\n", id, l.MaxIterations, orNone(l.MaxRuntime), l.MaxCostUSD)
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&maxIterations, "max-iterations", 0, "the session's new iteration limit")
	cmd.Flags().DurationVar(&maxRuntime, "max-runtime", 0, "the session's new wall-clock limit, such as 6h")
	cmd.Flags().Float64Var(&maxCost, "max-cost", 0, "the session's new cost limit in US dollars")
	return cmd
}

func orNone(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}
