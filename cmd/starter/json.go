package main

import (
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/durable-ralph/ralph/contract"
)

// The documents below are what -o json prints. Their field names are
// stable (docs/operations.md documents them): add fields, never rename one. What
// the workflows report is nested as the contract's own JSON (status,
// result); the fields around it say what Temporal knows of the execution.

// workflowDoc is what every document says of its workflow execution.
type workflowDoc struct {
	// Kind is "session" (an issue's session and its rounds too), "queue"
	// or "pull" (the follower of an issue's pull request).
	Kind       string `json:"kind"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// ExecutionStatus is Temporal's: running, completed, failed,
	// canceled, terminated, continued_as_new or timed_out.
	ExecutionStatus string `json:"execution_status"`
}

// newWorkflowDoc is what info says of a workflow execution.
func newWorkflowDoc(info *workflowpb.WorkflowExecutionInfo) workflowDoc {
	kind := "session"
	switch info.GetType().GetName() {
	case contract.WorkflowIssueQueue:
		kind = "queue"
	case contract.WorkflowPullRequest:
		kind = "pull"
	case contract.WorkflowChangeSet:
		kind = "change set"
	}
	return workflowDoc{
		Kind:            kind,
		WorkflowID:      info.GetExecution().GetWorkflowId(),
		RunID:           info.GetExecution().GetRunId(),
		ExecutionStatus: executionStatus(info.GetStatus()),
	}
}

// executionStatus is how a workflow execution status reads: "running".
func executionStatus(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

// statusDoc is `status -o json`: S is what the workflow's status query
// answers (contract.Status, contract.QueueStatus), R its result once it
// has ended (contract.SessionResult, contract.QueueResult). Status is
// missing when the query could not be answered; then an ended workflow
// has its Result, or its Failure.
type statusDoc[S, R any] struct {
	workflowDoc
	// UIURL links to the workflow in the Temporal UI, when known.
	UIURL string `json:"ui_url,omitempty"`
	// livenessDoc says of a running session whether a worker of its
	// host polled lately.
	livenessDoc
	Status *S `json:"status,omitempty"`
	// RunningIteration is the iteration a session's agent works on now.
	RunningIteration *iterationDoc `json:"running_iteration,omitempty"`
	Result           *R            `json:"result,omitempty"`
	// Failure is the root cause of a failed workflow, as status prints it.
	Failure string `json:"failure,omitempty"`
}

type (
	sessionStatusDoc = statusDoc[contract.Status, contract.SessionResult]
	queueStatusDoc   = statusDoc[contract.QueueStatus, contract.QueueResult]
	pullStatusDoc    = statusDoc[contract.FollowStatus, contract.FollowResult]
)

// iterationDoc is the running iteration of a session: its attempt,
// whether and when its worker last reported (its liveness), and the
// progress its last heartbeat carried (the live view), if any yet.
type iterationDoc struct {
	Attempt int32 `json:"attempt"`
	// State is Temporal's: scheduled, started or cancel_requested.
	State           string             `json:"state"`
	ScheduledAt     string             `json:"scheduled_at,omitempty"`
	LastStartedAt   string             `json:"last_started_at,omitempty"`
	LastHeartbeatAt string             `json:"last_heartbeat_at,omitempty"`
	LastWorker      string             `json:"last_worker,omitempty"`
	LastFailure     string             `json:"last_failure,omitempty"`
	Progress        *contract.Progress `json:"progress,omitempty"`
}

// newIterationDoc is the running iteration among a session's pending
// activities, or nil when none runs.
func newIterationDoc(dc converter.DataConverter, pending []*workflowpb.PendingActivityInfo) *iterationDoc {
	pa, p, ok := runningIteration(dc, pending)
	if pa == nil {
		return nil
	}
	d := &iterationDoc{
		Attempt:         pa.GetAttempt(),
		State:           strings.ToLower(strings.TrimPrefix(pa.GetState().String(), "PENDING_ACTIVITY_STATE_")),
		ScheduledAt:     timeOf(pa.GetScheduledTime()),
		LastStartedAt:   timeOf(pa.GetLastStartedTime()),
		LastHeartbeatAt: timeOf(pa.GetLastHeartbeatTime()),
		LastWorker:      pa.GetLastWorkerIdentity(),
		LastFailure:     pa.GetLastFailure().GetMessage(),
	}
	if ok {
		d.Progress = &p
	}
	return d
}

// timeOf is ts in RFC 3339, in UTC to the second (what jq's fromdate
// reads), or "" when ts is unset.
func timeOf(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}

// listDoc is a line of `list -o json`: a session, an issue's session or
// a queue, from its search attributes.
type listDoc struct {
	workflowDoc
	// Issue is the issue number of an issue queue's session.
	Issue int64 `json:"issue,omitempty"`
	// State is the Ralph state (contract.State), "" before the first.
	State     string  `json:"state"`
	Iteration int64   `json:"iteration"`
	CostUSD   float64 `json:"cost_usd"`
	Repo      string  `json:"repo,omitempty"`
	Host      string  `json:"host,omitempty"`
	StartedAt string  `json:"started_at"`
	EndedAt   string  `json:"ended_at,omitempty"`
	// Waiting are a running queue's ready issues that wait for others.
	Waiting []contract.Waiting `json:"waiting,omitempty"`
	// livenessDoc says of a running session whether a worker of its
	// host polled lately.
	livenessDoc
	// started is StartedAt for the table.
	started time.Time
}

// newListDoc is the line of list -o json for the execution info.
func newListDoc(info *workflowpb.WorkflowExecutionInfo) listDoc {
	fields := info.GetSearchAttributes().GetIndexedFields()
	d := listDoc{
		workflowDoc: newWorkflowDoc(info),
		State:       attr(fields, contract.SearchRalphStatus, ""),
		StartedAt:   timeOf(info.GetStartTime()),
		EndedAt:     timeOf(info.GetCloseTime()),
		started:     info.GetStartTime().AsTime(),
		Iteration:   attr[int64](fields, contract.SearchRalphIteration, 0),
		CostUSD:     attr[float64](fields, contract.SearchRalphCostUSD, 0),
		Repo:        attr(fields, contract.SearchRalphRepo, ""),
		Host:        attr(fields, contract.SearchRalphHost, ""),
	}
	if d.Kind == "session" {
		d.Issue = attr[int64](fields, contract.SearchRalphIssue, 0)
	}
	return d
}

// attr is the search attribute name of fields, or def.
func attr[T any](fields map[string]*commonpb.Payload, name string, def T) T {
	p, ok := fields[name]
	if !ok {
		return def
	}
	var v T
	if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
		return def
	}
	return v
}
