package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

// waitReady waits until the frontend answers, registers the namespace and
// adds the search attributes when missing, and waits until the namespace,
// its search attributes, the history service and the matching service are
// all usable: it retries each readiness step in turn until it succeeds.
func (s *Server) waitReady(ctx context.Context, p *process) error {
	copts := client.Options{HostPort: s.HostPort(), Namespace: s.opts.Namespace, Logger: quietLogger()}
	c, err := client.NewLazyClient(copts)
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	defer c.Close()
	r := readiness{c: c, ns: s.opts.Namespace, opts: s.opts}
	steps := []struct {
		what string
		try  func(context.Context) error
	}{
		{"frontend health check", r.health},
		{"namespace " + r.ns, r.namespace},
		{"search attributes", r.searchAttributes},
		{"visibility query on the search attributes", r.visibility},
		{"history service", r.history},
		{"matching service", r.matching},
	}
	for _, step := range steps {
		if err := s.retry(ctx, p, step.what, step.try); err != nil {
			return err
		}
	}
	return nil
}

// retry tries a readiness step until it succeeds, fails for good, the
// server exits or ctx ends.
func (s *Server) retry(ctx context.Context, p *process, what string, try func(context.Context) error) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		last := try(attempt)
		cancel()
		if last == nil {
			return nil
		}
		if errors.As(last, new(permanent)) {
			return fmt.Errorf("temporal-server on %s: %s: %w", s.HostPort(), what, last)
		}
		select {
		case <-p.exited:
			return fmt.Errorf("temporal-server exited (%v) while waiting for the %s (last error: %v)", p.waitErr, what, last)
		case <-ctx.Done():
			return fmt.Errorf("temporal-server on %s not ready: timed out waiting for the %s: %v", s.HostPort(), what, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readiness holds the readiness steps of a server: each returns nil once
// its part of the server is usable.
type readiness struct {
	c    client.Client
	ns   string
	opts Options
}

func (r readiness) health(ctx context.Context) error {
	_, err := r.c.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err
}

// namespace registers the namespace unless it is described.
func (r readiness) namespace(ctx context.Context) error {
	svc := r.c.WorkflowService()
	_, err := svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: r.ns})
	var notFound *serviceerror.NamespaceNotFound
	if !errors.As(err, &notFound) {
		return err
	}
	_, err = svc.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        r.ns,
		WorkflowExecutionRetentionPeriod: durationpb.New(r.opts.Retention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return permanentIfInvalid(fmt.Errorf("register: %w", err))
	}
	return errors.New("registered, waiting for it to be described")
}

// searchAttributes adds the search attributes of the options that are
// not listed yet.
func (r readiness) searchAttributes(ctx context.Context) error {
	if len(r.opts.SearchAttributes) == 0 {
		return nil
	}
	have, err := r.c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: r.ns})
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range r.opts.SearchAttributes {
		got, ok := have.GetCustomAttributes()[name]
		if !ok {
			missing[name] = typ
		} else if got != typ {
			return permanent{fmt.Errorf("search attribute %s exists as %v, want %v", name, got, typ)}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = r.c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        r.ns,
		SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return permanentIfInvalid(fmt.Errorf("add %v: %w", slices.Sorted(maps.Keys(missing)), err))
	}
	return errors.New("added, waiting for them to be listed")
}

func (r readiness) visibility(ctx context.Context) error {
	_, err := r.c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: r.ns,
		Query:     searchAttributeQuery(r.opts.SearchAttributes),
	})
	return err
}

func (r readiness) history(ctx context.Context) error {
	// The frontend asks the history shard's owner about this execution,
	// which does not exist: NotFound is the answer of a working history
	// service.
	_, err := r.c.DescribeWorkflowExecution(ctx, readinessProbe, "")
	var notFound *serviceerror.NotFound
	if err == nil || errors.As(err, &notFound) {
		return nil
	}
	return err
}

func (r readiness) matching(ctx context.Context) error {
	_, err := r.c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
		Namespace:     r.ns,
		TaskQueue:     &taskqueuepb.TaskQueue{Name: readinessProbe, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
		TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW,
	})
	return err
}

// permanent marks an error of a readiness step that retrying cannot fix.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// permanentIfInvalid marks err permanent when the server refused the
// request as invalid (a bad namespace name, too many search attributes of
// a type).
func permanentIfInvalid(err error) error {
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) {
		return permanent{err}
	}
	return err
}

// searchAttributeQuery is a visibility query that names every attribute in
// sas, so that it fails until all of them are known to the frontend.
func searchAttributeQuery(sas map[string]enumspb.IndexedValueType) string {
	var terms []string
	for _, name := range slices.Sorted(maps.Keys(sas)) {
		terms = append(terms, "`"+name+"` IS NOT NULL")
	}
	return strings.Join(terms, " OR ")
}
