package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/durable-ralph/ralph/contract"
)

// encode prints v as -o json does and parses the line back.
func encode(t *testing.T, v any) map[string]any {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, newPrinter(&b).print(v))
	line := b.String()
	require.True(t, strings.HasSuffix(line, "\n"))
	require.Equal(t, 1, strings.Count(line, "\n"), "one line: %s", line)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &m), line)
	return m
}

// keys are the field names of m.
func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

var (
	started = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	dc      = converter.GetDefaultDataConverter()
)

func execution(t *testing.T, typ string, status enumspb.WorkflowExecutionStatus, attrs map[string]any) *workflowpb.WorkflowExecutionInfo {
	t.Helper()
	fields := map[string]*commonpb.Payload{}
	for k, v := range attrs {
		p, err := dc.ToPayload(v)
		require.NoError(t, err)
		fields[k] = p
	}
	return &workflowpb.WorkflowExecutionInfo{
		Execution:        &commonpb.WorkflowExecution{WorkflowId: "ralph-app-1234@laptop", RunId: "run-1"},
		Type:             &commonpb.WorkflowType{Name: typ},
		Status:           status,
		StartTime:        timestamppb.New(started),
		SearchAttributes: &commonpb.SearchAttributes{IndexedFields: fields},
	}
}

func TestSessionStatusJSON(t *testing.T) {
	progress := contract.Progress{Attempt: 2, Iteration: 3, Turns: 7, StartedAt: started, UpdatedAt: started.Add(time.Minute),
		Live: []contract.LiveEvent{{Seq: 1, At: started.Add(10 * time.Second), Kind: contract.LiveTool, Name: "Bash", Text: "go test <./...> && echo"}}}
	details, err := dc.ToPayloads(progress)
	require.NoError(t, err)
	pending := []*workflowpb.PendingActivityInfo{{
		ActivityType: &commonpb.ActivityType{Name: contract.ActivityRunIteration}, Attempt: 2, HeartbeatDetails: details,
		State: enumspb.PENDING_ACTIVITY_STATE_STARTED, LastHeartbeatTime: timestamppb.New(started.Add(time.Minute + 123*time.Millisecond)),
		LastWorkerIdentity: "123@laptop", LastFailure: &failurepb.Failure{Message: "worker went away"},
	}}
	st := contract.Status{SessionID: "ralph-app-1234@laptop", Workspace: "/src/app", State: contract.StateRunning, Iteration: 3, Running: true, StartedAt: started}
	doc := sessionStatusDoc{
		workflowDoc:      newWorkflowDoc(execution(t, contract.WorkflowSession, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil)),
		UIURL:            "http://localhost:8233/namespaces/default/workflows/ralph-app-1234@laptop",
		Status:           &st,
		RunningIteration: newIterationDoc(dc, pending),
	}
	m := encode(t, doc)
	require.ElementsMatch(t, []string{"kind", "workflow_id", "run_id", "execution_status", "ui_url", "status", "running_iteration"}, keys(m))
	require.Equal(t, "session", m["kind"])
	require.Equal(t, "ralph-app-1234@laptop", m["workflow_id"])
	require.Equal(t, "run-1", m["run_id"])
	require.Equal(t, "running", m["execution_status"])
	status := m["status"].(map[string]any)
	require.Equal(t, "running", status["state"])
	require.Equal(t, "ralph-app-1234@laptop", status["session_id"])
	require.EqualValues(t, 3, status["iteration"])
	it := m["running_iteration"].(map[string]any)
	require.ElementsMatch(t, []string{"attempt", "state", "last_heartbeat_at", "last_worker", "last_failure", "progress"}, keys(it))
	require.EqualValues(t, 2, it["attempt"])
	require.Equal(t, "started", it["state"])
	require.Equal(t, "2026-11-22T10:01:00Z", it["last_heartbeat_at"])
	require.Equal(t, "123@laptop", it["last_worker"])
	require.Equal(t, "worker went away", it["last_failure"])
	live := it["progress"].(map[string]any)["live"].([]any)
	require.Equal(t, "go test <./...> && echo", live[0].(map[string]any)["text"], "not HTML-escaped")
}

func TestEndedStatusJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  any
		want []string
		kind string
	}{
		{"session_result", sessionStatusDoc{
			workflowDoc: newWorkflowDoc(execution(t, contract.WorkflowSession, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, nil)),
			Result:      &contract.SessionResult{SessionID: "ralph-app-1234@laptop", Reason: contract.ReasonComplete, Iterations: 3},
		}, []string{"kind", "workflow_id", "run_id", "execution_status", "result"}, "session"},
		{"session_failure", sessionStatusDoc{
			workflowDoc: newWorkflowDoc(execution(t, contract.WorkflowSession, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, nil)),
			Failure:     "agent binary \"claude\" not found on PATH",
		}, []string{"kind", "workflow_id", "run_id", "execution_status", "failure"}, "session"},
		{"queue_status", queueStatusDoc{
			workflowDoc: newWorkflowDoc(execution(t, contract.WorkflowIssueQueue, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil)),
			Status:      &contract.QueueStatus{QueueID: "ralph-queue-acme-app@laptop", Repo: "acme/app", State: contract.StateIdle},
		}, []string{"kind", "workflow_id", "run_id", "execution_status", "status"}, "queue"},
		{"queue_result", queueStatusDoc{
			workflowDoc: newWorkflowDoc(execution(t, contract.WorkflowIssueQueue, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, nil)),
			Result:      &contract.QueueResult{Reason: contract.ReasonStopped, Totals: contract.QueueTotals{Done: 2}},
		}, []string{"kind", "workflow_id", "run_id", "execution_status", "result"}, "queue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := encode(t, tc.doc)
			require.ElementsMatch(t, tc.want, keys(m))
			require.Equal(t, tc.kind, m["kind"])
		})
	}
}

func TestListJSON(t *testing.T) {
	for _, tc := range []struct {
		name  string
		info  *workflowpb.WorkflowExecutionInfo
		want  map[string]any
		text  string
		extra []string
	}{
		{
			name: "session",
			info: execution(t, contract.WorkflowSession, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, map[string]any{
				contract.SearchRalphStatus: "running", contract.SearchRalphIteration: 4,
				contract.SearchRalphCostUSD: 0.25, contract.SearchRalphHost: "laptop",
			}),
			want: map[string]any{"kind": "session", "state": "running", "iteration": 4.0, "cost_usd": 0.25, "host": "laptop"},
			text: "session  running    running  4          $0.2500  -     laptop",
		},
		{
			name: "issue_session",
			info: execution(t, contract.WorkflowSession, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, map[string]any{
				contract.SearchRalphStatus: "limited", contract.SearchRalphIssue: 12, contract.SearchRalphRepo: "acme/app",
			}),
			want:  map[string]any{"kind": "session", "issue": 12.0, "state": "limited", "repo": "acme/app", "execution_status": "completed"},
			text:  "issue #12  completed  stopped by limit  0          $0.0000  acme/app  -",
			extra: []string{"ended_at"},
		},
		{
			name: "queue_before_its_first_state",
			info: execution(t, contract.WorkflowIssueQueue, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil),
			want: map[string]any{"kind": "queue", "state": "", "iteration": 0.0},
			text: "queue  running    -      0          $0.0000  -     -",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				tc.info.CloseTime = timestamppb.New(started.Add(time.Hour))
			}
			d := newListDoc(tc.info)
			m := encode(t, d)
			for k, v := range tc.want {
				require.Equal(t, v, m[k], k)
			}
			require.Equal(t, "2026-11-22T10:00:00Z", m["started_at"])
			for _, k := range []string{"kind", "workflow_id", "run_id", "execution_status", "state", "iteration", "cost_usd", "started_at"} {
				require.Contains(t, m, k)
			}
			for _, k := range tc.extra {
				require.Contains(t, m, k)
			}
			if tc.info.GetCloseTime() == nil {
				require.NotContains(t, m, "ended_at")
			}

			var b bytes.Buffer
			require.NoError(t, printList(&b, []listDoc{d}))
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			require.Len(t, lines, 2)
			require.True(t, strings.HasPrefix(lines[0], "ID "))
			require.Contains(t, strings.Join(strings.Fields(lines[1]), " "), strings.Join(strings.Fields(tc.text), " "))
		})
	}
}

func TestNoRunningIteration(t *testing.T) {
	require.Nil(t, newIterationDoc(dc, nil))
	require.Nil(t, newIterationDoc(dc, []*workflowpb.PendingActivityInfo{{ActivityType: &commonpb.ActivityType{Name: "PrepareWorkspace"}}}))
	d := newIterationDoc(dc, []*workflowpb.PendingActivityInfo{{ActivityType: &commonpb.ActivityType{Name: contract.ActivityRunIteration}, Attempt: 1}})
	require.NotNil(t, d)
	require.Nil(t, d.Progress, "before the first heartbeat")
	require.ElementsMatch(t, []string{"attempt", "state"}, keys(encode(t, d)))
}

func TestOutputFormat(t *testing.T) {
	var f outputFormat
	require.NoError(t, f.Set("json"))
	require.Equal(t, outputJSON, f)
	require.NoError(t, f.Set("text"))
	require.Equal(t, outputText, f)
	require.EqualError(t, f.Set("yaml"), `the output format is text or json, not "yaml"`)
	require.EqualError(t, f.Set(""), `the output format is text or json, not ""`)
	require.Equal(t, outputText, f, "unchanged by a bad value")
}

func TestExamplePRD(t *testing.T) {
	prd, err := examplePRD(`my "app"`)
	require.NoError(t, err)
	var doc struct {
		Project     string `json:"project"`
		UserStories []struct {
			ID string `json:"id"`
		} `json:"userStories"`
	}
	require.NoError(t, json.Unmarshal([]byte(prd), &doc))
	require.Equal(t, `my "app"`, doc.Project)
	require.Len(t, doc.UserStories, 2)
}

// TestMoneyInJSON: amounts are printed as people write them, rounded to
// a millionth of a dollar, not as the float64 sums they are (0.0375, not
// 0.037500000000000006), in list's lines and status's documents alike;
// strings and whole numbers are left as they are.
func TestMoneyInJSON(t *testing.T) {
	info := execution(t, contract.WorkflowSession, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, map[string]any{
		contract.SearchRalphCostUSD: 0.0125 + 0.0125 + 0.0125, contract.SearchRalphIteration: 3,
	})
	var b bytes.Buffer
	require.NoError(t, newPrinter(&b).print(newListDoc(info)))
	require.Contains(t, b.String(), `"cost_usd":0.0375,`)
	require.Contains(t, b.String(), `"iteration":3,`)

	b.Reset()
	doc := sessionStatusDoc{
		workflowDoc: newWorkflowDoc(info),
		Status: &contract.Status{SessionID: "cost 0.037500000000000006 in a string", Totals: contract.Totals{CostUSD: 0.1 + 0.2,
			CostByBackend: map[string]float64{"codex": 1e-7, "claude": 2.0000000000000004}}},
	}
	require.NoError(t, newPrinter(&b).print(doc))
	require.Contains(t, b.String(), `"cost_usd":0.3,`)
	require.Contains(t, b.String(), `"cost_by_backend":{"claude":2,"codex":0}`)
	require.Contains(t, b.String(), `"session_id":"cost 0.037500000000000006 in a string"`)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &m), "still JSON: %s", b.String())
}
