package devserver_test

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/internal/devserver"
)

func TestServerPersistsAcrossRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	uiPort, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	opts := devserver.Options{
		StateDir:         dir,
		UIPort:           uiPort,
		SearchAttributes: map[string]enumspb.IndexedValueType{"RalphStatus": enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	}

	srv, err := devserver.Start(ctx, opts)
	require.NoError(t, err)
	rec, st, err := devserver.Find(dir)
	require.NoError(t, err)
	require.Equal(t, devserver.Running, st)
	require.Equal(t, srv.Record(), rec)
	require.Equal(t, srv.Address(), rec.Address)
	require.Equal(t, srv.UIURL(), rec.UIURL)

	// A second server on the same state directory is refused, named.
	_, err = devserver.Start(ctx, devserver.Options{StateDir: dir})
	var locked *devserver.LockedError
	require.ErrorAs(t, err, &locked)
	require.Equal(t, srv.Address(), locked.Holder.Address)

	c, err := client.Dial(client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()})
	require.NoError(t, err)
	sa, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, sa.GetCustomAttributes()["RalphStatus"])

	resp, err := http.Get(srv.UIURL() + "/namespaces/default/workflows")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// A schedule-to-close long timer survives in the database.
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "persisted", TaskQueue: "nobody"}, "SomeWorkflow")
	require.NoError(t, err)
	c.Close()
	srv.Stop()
	_, st, err = devserver.Find(dir)
	require.NoError(t, err)
	require.Equal(t, devserver.NotRunning, st)

	opts.Port = 0
	started := time.Now()
	srv, err = devserver.Start(ctx, opts)
	require.NoError(t, err)
	defer srv.Stop()
	t.Logf("restart on an existing database took %s", time.Since(started))
	c, err = client.Dial(client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()})
	require.NoError(t, err)
	defer c.Close()
	desc, err := c.DescribeWorkflowExecution(ctx, "persisted", "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus())
}

func TestStartRefusesATakenPort(t *testing.T) {
	ctx := context.Background()
	srv, err := devserver.Start(ctx, devserver.Options{})
	require.NoError(t, err)
	defer srv.Stop()
	_, port, _ := splitHostPort(srv.Address())
	_, err = devserver.Start(ctx, devserver.Options{Port: port})
	require.ErrorContains(t, err, "is not free")
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	return host, port, err
}
