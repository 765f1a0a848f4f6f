package testsuite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

// jsonDoc is what `starter status -o json` prints, as docs/operations.md
// documents it, with the fields these tests read.
type jsonDoc struct {
	Kind             string          `json:"kind"`
	WorkflowID       string          `json:"workflow_id"`
	RunID            string          `json:"run_id"`
	ExecutionStatus  string          `json:"execution_status"`
	UIURL            string          `json:"ui_url"`
	Status           json.RawMessage `json:"status"`
	RunningIteration *struct {
		Attempt         int    `json:"attempt"`
		State           string `json:"state"`
		LastHeartbeatAt string `json:"last_heartbeat_at"`
		LastWorker      string `json:"last_worker"`
		Progress        *struct {
			Iteration int `json:"iteration"`
			Live      []struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"live"`
		} `json:"progress"`
	} `json:"running_iteration"`
	Result  json.RawMessage `json:"result"`
	Failure string          `json:"failure"`
}

// jsonSession is the session status nested in a jsonDoc.
type jsonSession struct {
	SessionID string `json:"session_id"`
	State     string `json:"state"`
	Reason    string `json:"reason"`
	Iteration int    `json:"iteration"`
	Running   bool   `json:"running"`
	Totals    struct {
		CostUSD float64 `json:"cost_usd"`
		Commits int     `json:"commits"`
	} `json:"totals"`
	Recent []struct {
		Iteration int    `json:"iteration"`
		Outcome   string `json:"outcome"`
	} `json:"recent"`
}

// jsonListLine is a line of `starter list -o json`.
type jsonListLine struct {
	Kind            string  `json:"kind"`
	WorkflowID      string  `json:"workflow_id"`
	RunID           string  `json:"run_id"`
	ExecutionStatus string  `json:"execution_status"`
	Issue           int     `json:"issue"`
	State           string  `json:"state"`
	Iteration       int     `json:"iteration"`
	CostUSD         float64 `json:"cost_usd"`
	Repo            string  `json:"repo"`
	Host            string  `json:"host"`
	StartedAt       string  `json:"started_at"`
	EndedAt         string  `json:"ended_at"`
}

// starterOut runs the starter with env and returns its exit code, its
// standard output and, apart, its standard error: JSON goes to the one,
// notices to the other.
func starterOut(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.starter, args...)
	cmd.Env = childEnv(env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err, "starter %v", args)
	return 0, out.String(), errOut.String()
}

// statusJSON runs `starter status -o json` with args and decodes its one
// line, checking the field names every status document has.
func statusJSON(t *testing.T, env []string, args ...string) (jsonDoc, map[string]any) {
	t.Helper()
	code, out, errOut := starterOut(t, env, append([]string{"status", "--dev", "-o", "json"}, args...)...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Equal(t, 1, strings.Count(out, "\n"), "one line: %s", out)
	var doc jsonDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	var fields map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &fields), out)
	for _, k := range []string{"kind", "workflow_id", "run_id", "execution_status"} {
		require.Contains(t, fields, k, out)
	}
	return doc, fields
}

// listJSON runs `starter list -o json` and decodes every line.
func listJSON(t *testing.T, env []string, args ...string) []jsonListLine {
	t.Helper()
	code, out, errOut := starterOut(t, env, append([]string{"list", "--dev", "-o", "json"}, args...)...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var lines []jsonListLine
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var l jsonListLine
		require.NoError(t, json.Unmarshal([]byte(line), &l), "line %q", line)
		_, err := time.Parse(time.RFC3339, l.StartedAt)
		require.NoError(t, err, "started_at of %s", line)
		lines = append(lines, l)
	}
	return lines
}

// TestJSONStatusAndList runs a session with the fake agent against
// `worker --dev` and reads it with status -o json while an iteration runs
// (its running iteration, liveness and live view) and after it ended, and
// with list -o json, one object a line.
func TestJSONStatusAndList(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 4000}))
	id := sessionIDOf(r.Dir)
	startDevWorker(t, se)

	code, out, errOut := starterOut(t, se.env, "status", "--dev", "-o", "yaml", r.Dir)
	require.Equal(t, 1, code, out)
	require.Empty(t, out)
	require.Equal(t, "starter: invalid argument \"yaml\" for \"-o, --output\" flag: the output format is text or json, not \"yaml\"\n", errOut)

	code, out, errOut = starterOut(t, se.env, "run", "--dev", r.Dir)
	require.Equal(t, 0, code, out+errOut)

	// While the agent works: what its last heartbeat says.
	var doc jsonDoc
	var fields map[string]any
	waitFor(t, 2*time.Minute, "a running iteration with its live view", func() bool {
		doc, fields = statusJSON(t, se.env, r.Dir)
		ri := doc.RunningIteration
		return ri != nil && ri.Progress != nil && len(ri.Progress.Live) > 0 && ri.LastHeartbeatAt != ""
	})
	require.Equal(t, "session", doc.Kind)
	require.Equal(t, id, doc.WorkflowID)
	require.NotEmpty(t, doc.RunID)
	require.Equal(t, "running", doc.ExecutionStatus)
	require.Contains(t, doc.UIURL, "/workflows/"+id)
	ri := doc.RunningIteration
	require.Equal(t, "started", ri.State)
	require.GreaterOrEqual(t, ri.Attempt, 1)
	require.NotEmpty(t, ri.LastWorker)
	_, err := time.Parse(time.RFC3339, ri.LastHeartbeatAt)
	require.NoError(t, err)
	require.GreaterOrEqual(t, ri.Progress.Iteration, 1)
	var st jsonSession
	require.NoError(t, json.Unmarshal(doc.Status, &st))
	require.Equal(t, id, st.SessionID)
	require.Equal(t, "running", st.State)
	require.True(t, st.Running)
	require.NotContains(t, fields, "result")

	lines := listJSON(t, se.env, "--status", "running")
	require.Len(t, lines, 1)
	require.Equal(t, id, lines[0].WorkflowID)
	require.Equal(t, "running", lines[0].ExecutionStatus)
	require.Empty(t, lines[0].EndedAt)

	// To its end, then once more.
	code, out, errOut = starterOut(t, se.env, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "ended: complete")

	doc, fields = statusJSON(t, se.env, r.Dir)
	require.Equal(t, "completed", doc.ExecutionStatus)
	require.Nil(t, doc.RunningIteration)
	require.NotContains(t, fields, "running_iteration")
	st = jsonSession{}
	require.NoError(t, json.Unmarshal(doc.Status, &st))
	require.Equal(t, "completed", st.State)
	require.Equal(t, "complete", st.Reason)
	require.GreaterOrEqual(t, st.Iteration, 3)
	require.Equal(t, 3, st.Totals.Commits)
	require.GreaterOrEqual(t, len(st.Recent), 3)
	require.Equal(t, "success", st.Recent[len(st.Recent)-1].Outcome)

	lines = listJSON(t, se.env)
	require.Len(t, lines, 1)
	l := lines[0]
	require.Equal(t, jsonListLine{
		Kind: "session", WorkflowID: id, RunID: doc.RunID, ExecutionStatus: "completed",
		State: "completed", Iteration: l.Iteration, CostUSD: l.CostUSD, Repo: filepath.Base(r.Dir), Host: testHost, StartedAt: l.StartedAt, EndedAt: l.EndedAt,
	}, l)
	require.GreaterOrEqual(t, l.Iteration, 3)
	require.Greater(t, l.CostUSD, 0.0)
	_, err = time.Parse(time.RFC3339, l.EndedAt)
	require.NoError(t, err)

	// The text is as it was.
	code, out, _ = starterOut(t, se.env, "list", "--dev")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `(?m)^ID\s+KIND\s+EXECUTION\s+STATE\s+ITERATION\s+COST\s+REPO\s+HOST\s+STARTED\n`+regexp.QuoteMeta(id)+`\s+session\s+completed\s+completed\s+\d+\s+\$\d+\.\d{4}\s+`+regexp.QuoteMeta(filepath.Base(r.Dir))+`\s+`+regexp.QuoteMeta(testHost)+`\s+\d{4}-`, out)
	code, out, _ = starterOut(t, se.env, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `State\s+completed \(complete\); execution completed`, out)
}

// TestJSONQueueStatus runs an issue queue against the fake GitHub and
// reads it with status --queue DIR -o json: the queue's status, then,
// once it is stopped, its end.
func TestJSONQueueStatus(t *testing.T) {
	const token = "ghp_e2eJSONToken0123456789abcdefABCDEF"
	gh := fakegithub.New("acme", "app", token, "ralph-bot")
	t.Cleanup(gh.Close)
	gh.SetPermission("alice", "write")
	n := gh.AddIssue(fakegithub.IssueSpec{Title: "Add a greeting", Author: "alice", Labels: []string{"ralph-ready"}})

	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))
	clone, _ := newClone(t)

	w := startProc(t, append(append([]string(nil), se.env...), "GITHUB_TOKEN="+token, "RALPH_GITHUB_WRITE_INTERVAL=200ms"), bins.worker, "--dev")
	waitFor(t, time.Minute, "the worker's embedded server", func() bool { return strings.Contains(w.Output(), "Worker polling") })
	code, stdout, stderr := starterOut(t, se.env, "queue", "--dev", "--repo", "acme/app", "--github-api-url", gh.URL(), "--poll-interval", "1h", "--follow-pulls=false", clone.Dir)
	require.Equal(t, 0, code, stdout+stderr)

	waitFor(t, 4*time.Minute, "the pull request", func() bool { return len(gh.Pulls()) == 1 })
	var doc jsonDoc
	var st struct {
		QueueID string `json:"queue_id"`
		Repo    string `json:"repo"`
		Clone   string `json:"clone"`
		State   string `json:"state"`
		Totals  struct {
			Done int `json:"done"`
		} `json:"totals"`
		Recent []struct {
			Number int    `json:"number"`
			PR     int    `json:"pr"`
			Reason string `json:"reason"`
		} `json:"recent"`
	}
	queueArgs := []string{"--repo", "acme/app", "--queue", clone.Dir}
	waitFor(t, time.Minute, "the queue to go idle", func() bool {
		doc, _ = statusJSON(t, se.env, queueArgs...)
		return doc.Status != nil && json.Unmarshal(doc.Status, &st) == nil && st.State == "idle"
	})
	require.Equal(t, "queue", doc.Kind)
	require.True(t, strings.HasPrefix(doc.WorkflowID, "ralph-queue-acme-app"), doc.WorkflowID)
	require.Equal(t, "running", doc.ExecutionStatus)
	require.Equal(t, doc.WorkflowID, st.QueueID)
	require.Equal(t, "acme/app", st.Repo)
	require.Equal(t, clone.Dir, st.Clone)
	require.Equal(t, 1, st.Totals.Done)
	require.Len(t, st.Recent, 1)
	require.Equal(t, n, st.Recent[0].Number)
	require.Equal(t, gh.Pulls()[0].Number, st.Recent[0].PR)

	// The queue's runs (one per issue, continue-as-new) and the issue's
	// session.
	var running, sessions int
	for _, l := range listJSON(t, se.env) {
		switch l.Kind {
		case "queue":
			require.Equal(t, doc.WorkflowID, l.WorkflowID)
			if l.ExecutionStatus == "running" {
				running++
				require.Equal(t, doc.RunID, l.RunID)
				require.Equal(t, "idle", l.State)
			}
		case "session":
			sessions++
			require.Equal(t, n, l.Issue, "the issue's session")
			require.Equal(t, "acme/app", l.Repo)
		default:
			t.Fatalf("kind %q", l.Kind)
		}
	}
	require.Equal(t, 1, running)
	require.Equal(t, 1, sessions)

	code, stdout, stderr = starterOut(t, se.env, append([]string{"stop", "--dev"}, queueArgs...)...)
	require.Equal(t, 0, code, stdout+stderr)
	waitFor(t, 2*time.Minute, "the queue to end", func() bool {
		doc, _ = statusJSON(t, se.env, queueArgs...)
		return doc.ExecutionStatus == "completed"
	})
	require.NoError(t, json.Unmarshal(doc.Status, &st))
	require.Equal(t, "stopped", st.State)
}
