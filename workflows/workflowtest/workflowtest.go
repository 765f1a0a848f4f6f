// Package workflowtest holds what the tests of the workflow packages
// share: a session's input and preparation to start from, an iteration
// that made progress, and a recorder of the notifications sent. Only
// tests import it.
package workflowtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	sdkworkflow "go.temporal.io/sdk/workflow"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/notify"
)

// SessionInput is a session's input to start a test from: a workspace,
// Claude Code, auto-commit and limits none of which a short test reaches.
func SessionInput() contract.SessionInput {
	return contract.SessionInput{
		Workspace: "/work/repo",
		Agent:     contract.AgentSettings{Command: []string{"claude"}},
		Git:       contract.GitSettings{AutoCommit: true},
		Limits: contract.Limits{
			MaxIterations:          10,
			MaxRuntime:             4 * time.Hour,
			MaxCostUSD:             50,
			MaxConsecutiveFailures: 3,
			MaxNoProgress:          3,
			IterationTimeout:       30 * time.Minute,
			HeartbeatTimeout:       10 * time.Second,
			IterationsPerRun:       25,
		},
	}
}

// Prepared is what PrepareWorkspace finds: a prd.json of three stories.
func Prepared() contract.PrepareResult {
	return contract.PrepareResult{
		Mode: "prd", CompletionPromise: "<promise>COMPLETE</promise>", Branch: "main", Repo: "acme/app",
		Task: contract.TaskState{Mode: "prd", File: "prd.json", Total: 3, Verifiable: true, CurrentID: "US-001"},
	}
}

// Progressed is a successful iteration that changed a file and committed.
func Progressed(i int, done int) contract.IterationResult {
	return contract.IterationResult{
		Iteration: i, Outcome: contract.OutcomeSuccess, CostUSD: 0.01,
		Usage:        contract.Usage{InputTokens: 100, OutputTokens: 20},
		NumTurns:     3,
		FilesChanged: []string{"a.go"}, Commit: "c0ffee" + string(rune('0'+i)),
		Task: contract.TaskState{Mode: "prd", File: "prd.json", Total: 3, Done: done, Complete: done == 3, Verifiable: true},
	}
}

// Notes records the notifications a test environment sent.
type Notes struct {
	mu  sync.Mutex
	all []contract.Notification
}

// List is the notifications sent, once each (the Notification workflow
// sends one to each channel by an activity of its own).
func (n *Notes) List() []contract.Notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []contract.Notification
	channels := map[string][]string{}
	for _, note := range n.all {
		if channels[note.Key] == nil {
			note.Channel = ""
			out = append(out, note)
		}
		channels[note.Key] = append(channels[note.Key], note.Channel)
	}
	for key, chs := range channels {
		if len(chs) != 3 {
			panic(fmt.Sprintf("notification %s went to %v, not to each of the three channels once", key, chs))
		}
	}
	return out
}

// RegisterNotify makes env send notifications through a Notify activity
// that records them.
func RegisterNotify(env *testsuite.TestWorkflowEnvironment) *Notes {
	n := &Notes{}
	env.RegisterWorkflow(notify.Notification)
	env.RegisterActivityWithOptions(func(_ context.Context, note contract.Notification) (contract.NotifyResult, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.all = append(n.all, note)
		return contract.NotifyResult{}, nil
	}, activity.RegisterOptions{Name: contract.ActivityNotify})
	env.RegisterActivityWithOptions(func(context.Context, contract.NotifyEvent) (bool, error) { return true, nil },
		activity.RegisterOptions{Name: contract.ActivityNotifies})
	return n
}

// HistoriesDir is where a workflow package keeps the histories recorded
// from end-to-end runs of its workflow, in the JSON format of `temporal
// workflow show --output json`.
const HistoriesDir = "testdata/histories"

// Replay replays every history in the package's HistoriesDir against
// today's code of its workflows, so that a change that would break the
// runs of them that are open fails here, before it reaches a worker.
func Replay(t *testing.T, workflows ...any) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(HistoriesDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded history in %s", HistoriesDir)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			replayer := worker.NewWorkflowReplayer()
			for _, w := range workflows {
				replayer.RegisterWorkflow(w)
			}
			require.NoError(t, ReplayFile(replayer, f))
		})
	}
}

// ReplayFile replays the history in the JSON file f (as `temporal
// workflow show --output json` writes it) with replayer, as the run it
// is (RunIDOf).
func ReplayFile(replayer worker.WorkflowReplayer, f string) error {
	data, err := os.Open(f)
	if err != nil {
		return err
	}
	defer data.Close()
	h, err := client.HistoryFromJSON(data, client.HistoryJSONOptions{})
	if err != nil {
		return fmt.Errorf("read %s: %w", f, err)
	}
	return Replay1(replayer, h)
}

// Replay1 replays history h with replayer as the run it is (RunIDOf).
func Replay1(replayer worker.WorkflowReplayer, h *historypb.History) error {
	return replayer.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: sdkworkflow.Execution{ID: "ReplayId", RunID: RunIDOf(h)},
	})
}

// RunIDOf is the run ID of the run whose history is h: the one its last
// reset gave it, else the one it was created with. A replayer given no
// run ID takes the latter, and a session tells a reset run by its run ID
// (it waits there for its rewind).
func RunIDOf(h *historypb.History) string {
	run := ""
	for _, e := range h.GetEvents() {
		if a := e.GetWorkflowTaskFailedEventAttributes(); a != nil && a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW {
			run = a.GetNewRunId()
		}
	}
	if run == "" && len(h.GetEvents()) > 0 {
		run = h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId()
	}
	return run
}
