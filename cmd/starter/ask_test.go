package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
)

// fakeClient is a Temporal client whose queries, descriptions and task
// queues a test scripts; anything else panics (nil embedded client).
type fakeClient struct {
	client.Client
	mu sync.Mutex
	// query answers the n-th query (from 1) of name to id.
	query func(n int, id, name string) (any, error)
	asked int
	// describe answers DescribeWorkflowExecution.
	describe func(id string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
	// pollers poll every task queue.
	pollers []*taskqueuepb.PollerInfo
}

func (c *fakeClient) QueryWorkflow(ctx context.Context, id, _, name string, _ ...any) (converter.EncodedValue, error) {
	c.mu.Lock()
	c.asked++
	n := c.asked
	c.mu.Unlock()
	v, err := c.query(n, id, name)
	if err != nil {
		return nil, err
	}
	if d, ok := v.(time.Duration); ok { // an answer that takes this long
		select {
		case <-ctx.Done():
			return nil, serviceerror.NewDeadlineExceeded("query timed out before a worker could process it")
		case <-time.After(d):
		}
		return jsonValue{contract.Status{SessionID: id}}, nil
	}
	return jsonValue{v}, nil
}

func (c *fakeClient) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return c.describe(id)
}

func (c *fakeClient) DescribeTaskQueue(context.Context, string, enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	return &workflowservice.DescribeTaskQueueResponse{Pollers: c.pollers}, nil
}

// jsonValue is an answer of a query, as the SDK decodes one.
type jsonValue struct{ v any }

func (j jsonValue) HasValue() bool { return true }

func (j jsonValue) Get(ptr any) error {
	data, err := json.Marshal(j.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, ptr)
}

// TestQueryWaitsOutAHandover: a status query whose workflow's worker
// died is refused while the server waits on the dead worker's sticky
// queue, or restarts, and answered once another worker takes the
// workflow over: the command waits for that, saying so once, instead of
// failing. What a worker answered (a failed query) is not waited out.
func TestQueryWaitsOutAHandover(t *testing.T) {
	sticky := serviceerror.NewDeadlineExceeded("query timed out before a worker could process it")
	reset := serviceerror.NewUnavailable("stream terminated by RST_STREAM with error code: CANCEL")
	tests := []struct {
		name   string
		answer func(n int) (any, error)
		asked  int
		said   string
		err    string
	}{
		{"answered", func(int) (any, error) { return contract.Status{SessionID: "s"}, nil }, 1, "", ""},
		{"sticky_queue_of_a_dead_worker", func(n int) (any, error) {
			if n < 3 {
				return nil, sticky
			}
			return contract.Status{SessionID: "s"}, nil
		}, 3, waitingNote + "\n", ""},
		{"restarting_server", func(n int) (any, error) {
			if n == 1 {
				return nil, reset
			}
			return contract.Status{SessionID: "s"}, nil
		}, 2, waitingNote + "\n", ""},
		{"slow_answer", func(int) (any, error) { return handoverNotice + 500*time.Millisecond, nil }, 1, waitingNote + "\n", ""},
		{"query_failed", func(int) (any, error) { return nil, serviceerror.NewQueryFailed("unknown queryType status") }, 1, "", "unknown queryType"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			cctx := &commandContext{Context: context.Background(), stderr: &stderr}
			c := &fakeClient{query: func(n int, _, _ string) (any, error) { return tt.answer(n) }}
			st, err := query[contract.Status](cctx, c, cctx.waitingForWorker, "s")
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
			} else {
				require.NoError(t, err)
				require.Equal(t, "s", st.SessionID)
			}
			require.Equal(t, tt.asked, c.asked)
			require.Equal(t, tt.said, stderr.String(), "said once, on stderr")
		})
	}

	// A handover that takes longer than the command waits (here, its
	// context's deadline) ends with the server's error.
	var stderr bytes.Buffer
	cctx := &commandContext{Context: context.Background(), stderr: &stderr}
	ctx, cancel := context.WithTimeout(cctx, 1500*time.Millisecond)
	defer cancel()
	_, err := query[contract.Status](ctx, &fakeClient{query: func(int, string, string) (any, error) { return nil, sticky }}, cctx.waitingForWorker, "s")
	require.ErrorContains(t, err, "query timed out before a worker could process it")
	require.Equal(t, waitingNote+"\n", stderr.String())
}

// TestNoAnswerBlamesNoWorkerWhileOnePolls: a query of a running workflow
// that got no answer says why: a worker polls but did not answer (never
// that none runs), or none polls; an answer the worker gave is left as
// it is.
func TestNoAnswerBlamesNoWorkerWhileOnePolls(t *testing.T) {
	sticky := serviceerror.NewDeadlineExceeded("query timed out before a worker could process it")
	live := []*taskqueuepb.PollerInfo{{Identity: "worker-on-box", LastAccessTime: timestamppb.Now()}}
	tests := []struct {
		name    string
		pollers []*taskqueuepb.PollerInfo
		note    string
		err     error
		want    string
	}{
		{"a_worker_polls", live, "", sticky, `query timed out before a worker could process it (a worker polls task queue "ralph" but did not answer within 15s: try again in a moment)`},
		{"a_worker_polls_no_host_worker", live, "no worker is running for host box: start one with `worker`", sticky, `(a worker polls task queue "ralph" but did not answer within 15s`},
		{"none_polls_host_known", nil, "no worker is running for host box: start one with `worker`", sticky, "(no worker is running for host box: start one with `worker`)"},
		{"none_polls", nil, "", sticky, "(no worker is running for task queue ralph: start one with `worker`)"},
		{"the_worker_answered", live, "", serviceerror.NewQueryFailed("panic in the handler"), "panic in the handler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := &connection{cfg: config.Config{TaskQueue: "ralph"}, client: &fakeClient{pollers: tt.pollers}}
			cctx := &commandContext{Context: context.Background()}
			err := cctx.noAnswer(conn, tt.err, tt.note)
			require.ErrorContains(t, err, tt.want)
			require.True(t, errors.Is(err, tt.err))
			if tt.pollers != nil {
				require.NotContains(t, err.Error(), "no worker")
				require.NotContains(t, err.Error(), "is a worker running")
			}
			if handingOver(tt.err) {
				require.Equal(t, 1, strings.Count(err.Error(), "("), "one reason: %s", err)
			}
		})
	}
}
