package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/testsuite/cluster"
)

const (
	testNamespace = "cluster-test"
	testTaskQueue = "cluster-test"
	testAttribute = "RalphClusterTestKey"
)

// greet is the trivial workflow the test runs.
func greet(_ workflow.Context, name string) (string, error) {
	return "hello " + name, nil
}

func TestPostgresCluster(t *testing.T) {
	start := time.Now()
	pg := cluster.StartPostgres(t)
	t.Logf("PostgreSQL on %s in %v", pg.Addr(), time.Since(start).Round(time.Millisecond))

	opts := cluster.Options{
		Namespace:        testNamespace,
		SearchAttributes: map[string]enumspb.IndexedValueType{testAttribute: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	}
	start = time.Now()
	srv := cluster.StartServer(t, pg, opts)
	t.Logf("Temporal server on %s (namespace %s, log %s) in %v", srv.HostPort(), srv.Namespace(), srv.LogPath(), time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Schema setup is idempotent: a second run on the same, now used,
	// databases succeeds and leaves the schema version as it was.
	versions := func() string {
		t.Helper()
		var out string
		for _, db := range []string{"temporal", "temporal_visibility"} {
			v, err := pg.Query(ctx, db, "SELECT curr_version FROM schema_version")
			if err != nil {
				t.Fatal(err)
			}
			out += db + "=" + v + " "
		}
		return out
	}
	before := versions()
	if err := cluster.SetupSchema(ctx, pg, opts); err != nil {
		t.Fatalf("second schema setup: %v", err)
	}
	if after := versions(); after != before {
		t.Fatalf("schema versions changed by a second setup: %s -> %s", before, after)
	}
	t.Logf("schema versions: %s", before)

	c := srv.Dial(t)
	w := worker.New(c, testTaskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(greet, workflow.RegisterOptions{Name: "greet"})
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	defer w.Stop()

	key := temporal.NewSearchAttributeKeyKeyword(testAttribute)
	id := fmt.Sprintf("cluster-test-%d", time.Now().UnixNano())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             testTaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(key.ValueSet(id)),
	}, "greet", "cluster")
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	if got != "hello cluster" {
		t.Fatalf("workflow result = %q, want %q", got, "hello cluster")
	}

	// Visibility is written asynchronously: wait for the completed run to
	// be found by its search attribute.
	waitListed(ctx, t, c, fmt.Sprintf("%s = '%s'", testAttribute, id), id)

	// A graceful restart keeps everything: the namespace, the search
	// attribute and the workflow's history.
	start = time.Now()
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Logf("restarted in %v", time.Since(start).Round(time.Millisecond))
	waitListed(ctx, t, c, fmt.Sprintf("%s = '%s' AND ExecutionStatus = 'Completed'", testAttribute, id), id)
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &got); err != nil || got != "hello cluster" {
		t.Fatalf("result after restart = %q, %v", got, err)
	}
}

// waitListed waits until query lists exactly the workflow id.
func waitListed(ctx context.Context, t *testing.T, c client.Client, query, id string) {
	t.Helper()
	var last string
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		switch {
		case err != nil:
			last = err.Error()
		case len(resp.GetExecutions()) == 1 && resp.GetExecutions()[0].GetExecution().GetWorkflowId() == id:
			return
		default:
			last = fmt.Sprintf("%d executions", len(resp.GetExecutions()))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ListWorkflow %q never listed %s: %s", query, id, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
