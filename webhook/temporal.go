package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/durable-ralph/ralph/contract"
)

// DeliveriesFileName is the name of the record of deliveries in the
// worker's state directory.
const DeliveriesFileName = "webhook-deliveries.log"

// VisibilityFollowers lists running followers from Temporal's visibility
// store, by the RalphRepo and RalphIssue search attributes they carry.
type VisibilityFollowers struct {
	Client client.Client
}

// Followers lists the issues of owner/name whose followers run.
func (v VisibilityFollowers) Followers(ctx context.Context, owner, name string) ([]int, error) {
	// Owner and name are letters, digits, '.', '_' and '-' (the Handler
	// checks): nothing that could end the quoted string.
	query := fmt.Sprintf("WorkflowType = '%s' AND %s = '%s/%s' AND ExecutionStatus = 'Running'",
		contract.WorkflowPullRequest, contract.SearchRalphRepo, owner, name)
	var issues []int
	var token []byte
	for {
		resp, err := v.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list followers: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			p := e.GetSearchAttributes().GetIndexedFields()[contract.SearchRalphIssue]
			var n int64
			if p == nil || converter.GetDefaultDataConverter().FromPayload(p, &n) != nil || n < 1 {
				continue
			}
			issues = append(issues, int(n))
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return issues, nil
		}
	}
}

// New is the Handler of a worker whose Temporal client is c: it signals
// the workflows of host, lists followers from visibility and records
// deliveries in DeliveriesFileName in stateDir.
func New(c client.Client, host string, secret []byte, stateDir string, log *slog.Logger) (*Handler, error) {
	return NewHandler(Config{
		Host:           host,
		Secret:         secret,
		Signaler:       c,
		Followers:      VisibilityFollowers{Client: c},
		DeliveriesFile: filepath.Join(stateDir, DeliveriesFileName),
		Logger:         log,
	})
}

// Serve serves h at Path on addr (host:port; port 0 picks a free one)
// until stop is called, which also closes h. It returns the address it
// listens on.
func Serve(addr string, h *Handler) (stop func(), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen for GitHub webhooks: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Warn("github webhook server", "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = h.Close()
	}, ln.Addr().String(), nil
}
