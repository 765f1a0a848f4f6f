package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
)

// promptCommand is `starter prompt`.
type promptCommand struct {
	base
}

func (s *promptCommand) run(cctx *commandContext, args []string) error {
	cfg, workspace, err := loadWithWorkspace(s.cmd, args)
	if err != nil {
		return err
	}
	return printPrompt(cctx, cfg, workspace)
}

// printPrompt prints the prompt of the next iteration on workspace.
func printPrompt(cctx *commandContext, cfg config.Config, workspace string) error {
	sin, err := app.SessionInput(cfg, workspace)
	if err != nil {
		return err
	}
	in := contract.IterationInput{
		Workspace: sin.Workspace, Agent: sin.Agent, Task: sin.Task, Git: sin.Git,
		Iteration: 1, MaxIterations: sin.Limits.MaxIterations,
	}
	if st, ok := runningStatus(cctx, cfg, sin); ok {
		in.Iteration = st.Iteration + 1
		in.MaxIterations = st.Limits.MaxIterations
		in.Guidance = st.Guidance
		fmt.Fprintln(cctx.stderr, promptHeader(st, sin.Workspace))
	}
	prompt, err := activities.Prompt(cctx, in)
	if err != nil {
		return err
	}
	_, err = io.WriteString(cctx.stdout, prompt)
	return err
}

// promptHeader says which prompt printPrompt prints for the session of
// st: the next iteration's, with the guidance waiting for it. While an
// iteration runs, the next is the one after it (the task file as it is
// now), and the running one's own prompt is where the worker saved it.
func promptHeader(st contract.Status, workspace string) string {
	next := st.Iteration + 1
	if !st.Running {
		return fmt.Sprintf("The prompt of iteration %d, the next of session %s, with the guidance waiting for it:", next, st.SessionID)
	}
	if st.Workspace != "" {
		workspace = st.Workspace
	}
	key := st.ExecutionKey
	if key == "" {
		key = st.SessionID
	}
	saved := filepath.Join(workspace, contract.StateDir, "logs", key, fmt.Sprintf("iteration-%04d.attempt-1.jsonl", st.Iteration))
	return fmt.Sprintf("Iteration %d of session %s runs now; `starter log --iteration %d` shows its prompt (the first record of %s).\n"+
		"The prompt of iteration %d, the next, as the task file is now and with the guidance waiting for it:", st.Iteration, st.SessionID, st.Iteration, saved, next)
}

// runningStatus is the status of the session id when its server answers
// and the session runs; it starts no server.
func runningStatus(ctx context.Context, cfg config.Config, sin contract.SessionInput) (contract.Status, bool) {
	hostPort, namespace := serverOf(cfg)
	cdc, err := app.LoadCodec(cfg)
	if err != nil {
		return contract.Status{}, false
	}
	opts, err := app.ClientOptions(hostPort, namespace, cdc)
	if err != nil || !app.Reachable(opts.HostPort) {
		return contract.Status{}, false
	}
	c, err := app.Dial(ctx, opts)
	if err != nil {
		return contract.Status{}, false
	}
	defer c.Close()
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := query[contract.Status](qctx, c, nil, sessionOf(qctx, c, sin.Host, sin.Workspace, true))
	if err != nil || st.EndedAt != (time.Time{}) {
		return contract.Status{}, false
	}
	return st, true
}
