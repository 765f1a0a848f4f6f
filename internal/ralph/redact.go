package ralph

import (
	"context"

	"go.temporal.io/sdk/interceptor"

	"github.com/durable-ralph/ralph/redact"
)

// redactor is a worker interceptor that removes secrets from everything
// an activity sends to Temporal: its result, its error and its heartbeat
// details. RunIteration redacts its own output too; this covers every
// activity, present and future.
type redactor struct {
	interceptor.WorkerInterceptorBase
	r *redact.Redactor
}

func (w *redactor) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	in := &redactInbound{r: w.r}
	in.Next = next
	return in
}

type redactInbound struct {
	interceptor.ActivityInboundInterceptorBase
	r *redact.Redactor
}

func (a *redactInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	out := &redactOutbound{r: a.r}
	out.Next = outbound
	return a.Next.Init(out)
}

func (a *redactInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := a.Next.ExecuteActivity(ctx, in)
	return a.r.Value(res), a.r.Error(err)
}

type redactOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	r *redact.Redactor
}

func (o *redactOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	for i := range details {
		details[i] = o.r.Value(details[i])
	}
	o.Next.RecordHeartbeat(ctx, details...)
}
