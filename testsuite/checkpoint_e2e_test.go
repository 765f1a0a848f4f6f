package testsuite_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
)

// rawScenario writes a scenario file from a JSON document.
func rawScenario(t testing.TB, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	path := filepath.Join(fakeDir(t), "scenario.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// startDevWorker starts `worker --dev` and waits until it polls.
func startDevWorker(t *testing.T, se *starterEnv) *proc {
	t.Helper()
	w := startProc(t, se.env, bins.worker, "--dev")
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(w.Output(), "Worker polling") {
		select {
		case <-w.end:
			t.Fatalf("worker --dev ended before it polled:\n%s\n%s", w.Output(), devServerLog(se))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker --dev did not poll within 2m:\n%s\n%s", w.Output(), devServerLog(se))
		}
	}
	return w
}

// devServerLog is the end of the log of the dev server of se's state
// directory, for a failure's message.
func devServerLog(se *starterEnv) string {
	data, err := os.ReadFile(filepath.Join(se.stateDir, "temporal.log"))
	if err != nil {
		return "(no dev server log: " + err.Error() + ")"
	}
	if len(data) > 4<<10 {
		data = data[len(data)-4<<10:]
	}
	return "dev server log:\n" + string(data)
}

// starter runs the starter to its end and returns its exit code and output.
func starter(t *testing.T, se *starterEnv, args ...string) (int, string) {
	t.Helper()
	return runStarter(t, se.env, args...)
}

// waitForStarter waits up to a minute, for what, until the output of the
// starter of se run with args holds want.
func waitForStarter(t *testing.T, se *starterEnv, what, want string, args ...string) {
	t.Helper()
	waitFor(t, time.Minute, what, func() bool {
		_, out := starter(t, se, args...)
		return strings.Contains(out, want)
	})
}

// runStarter runs the starter with env to its end.
func runStarter(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	p := startProc(t, env, bins.starter, args...)
	code := p.wait(t, 3*time.Minute)
	return code, p.Output()
}

func TestCheckpointSurvivesWorkerAndServerRestart(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, rawScenario(t, map[string]any{
		"steps": []any{
			map[string]any{"auto": true},
			map[string]any{"checkpoint": map[string]any{
				"type": "decision", "question": "Which database should widgets live in?",
				"options": []string{"postgres", "sqlite"}, "context": "Both drivers are vendored.",
			}, "text": "I need a decision before US-002."},
		},
		"repeat": "auto",
	}))
	id := sessionIDOf(r.Dir)

	w := startDevWorker(t, se)
	// Two iterations per workflow run: the answer must survive
	// continue-as-new too.
	code, out := starter(t, se, "run", "--dev", "--iterations-per-run", "2", r.Dir)
	require.Equal(t, 0, code, out)

	// The session waits for a human; list finds it by its search attribute.
	waitForStarter(t, se, "the session to wait for a human", id, "list", "--dev", "--status", "awaiting_human")
	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "awaiting_human")
	require.Contains(t, out, "Waiting for a human: checkpoint cp-2 (decision, asked in iteration 2")
	require.Contains(t, out, "Which database should widgets live in?")
	require.Contains(t, out, "1. postgres")
	require.Contains(t, out, "\n  starter respond --state-dir "+se.stateDir+" "+id+" --checkpoint cp-2 --approve\n", "a command that runs as printed")

	// `temporal workflow list --query` sends exactly this visibility query.
	c := se.dial(t)
	resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: "RalphStatus = 'awaiting_human'",
	})
	require.NoError(t, err)
	require.Len(t, resp.GetExecutions(), 1)
	require.Equal(t, id, resp.GetExecutions()[0].GetExecution().GetWorkflowId())
	c.Close()

	// Kill the worker, stop the dev server, and start both again on the
	// same state directory.
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
	w.wait(t, time.Minute)
	code, out = starter(t, se, "dev", "stop")
	require.Equal(t, 0, code, out)
	code, out = starter(t, se, "dev", "status")
	require.Equal(t, 3, code, "no dev server runs: %s", out)
	startDevWorker(t, se)

	code, out = starter(t, se, "respond", "--dev", r.Dir, "--checkpoint", "cp-1", "--approve")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, `checkpoint "cp-1" is not pending; the pending checkpoint is cp-2`)

	code, out = starter(t, se, "respond", "--dev", r.Dir, "--checkpoint", "cp-2", "--answer", "sqlite, in a file next to the binary")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "answer to cp-2 recorded")

	code, out = starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Attached to running session")
	require.Contains(t, out, "ended: complete")
	replayFrom(t, se, id)

	prompt := sessionPrompt(t, r.Dir, id, 3)
	require.Contains(t, string(prompt), "Which database should widgets live in?")
	require.Contains(t, string(prompt), "sqlite, in a file next to the binary")
	later := sessionPrompt(t, r.Dir, id, 4)
	require.NotContains(t, string(later), "sqlite, in a file next to the binary", "an answer reaches one prompt")
	require.Len(t, r.ralphCommits(), 3)
}

func TestCLIControlCommands(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, rawScenario(t, map[string]any{"steps": []any{map[string]any{"auto": true, "sleep_ms": 1500}}}))
	id := sessionIDOf(r.Dir)
	startDevWorker(t, se)
	code, out := starter(t, se, "run", "--dev", r.Dir)
	require.Equal(t, 0, code, out)

	// Pause once the first iteration runs: it finishes, then the
	// session pauses with its cost spent.
	waitFor(t, time.Minute, "the first iteration to start", func() bool { return len(calls(t, se.env)) >= 1 })
	code, out = starter(t, se, "pause", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	waitForStarter(t, se, "the pause", id, "list", "--dev", "--status", "paused")
	code, out = starter(t, se, "guide", "--dev", r.Dir, "Keep the widget list sorted by name.")
	require.Equal(t, 0, code, out)
	code, out = starter(t, se, "set-limits", "--dev", r.Dir, "--max-iterations", "0")
	require.NotEqual(t, 0, code, out)
	code, out = starter(t, se, "set-limits", "--dev", r.Dir, "--max-cost", "0.001")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "below the $0.0125 already spent")
	code, out = starter(t, se, "set-limits", "--dev", r.Dir, "--max-iterations", "20")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "max iterations 20")
	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Keep the widget list sorted by name.")
	require.Regexp(t, `State\s+paused`, out)

	code, out = starter(t, se, "resume", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	code, out = starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")
	replayFrom(t, se, id)

	prompt := sessionPrompt(t, r.Dir, id, 2)
	require.Contains(t, string(prompt), "Keep the widget list sorted by name.")
}
