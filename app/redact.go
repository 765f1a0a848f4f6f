package app

import (
	"context"
	"errors"
	"strings"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/redact"
)

// secrets removes the worker's secrets from text: those known when it
// started, and those that come later, such as the installation tokens of
// a GitHub App.
type secrets struct {
	known *redact.Redactor
	// later returns the secrets that came since ("NAME=value"); nil
	// means none.
	later func() []string
}

// now is a redactor of the secrets that came later.
func (s *secrets) now() *redact.Redactor {
	if s.later == nil {
		return nil
	}
	return redact.New(nil, s.later()...)
}

// String returns text with every secret replaced.
func (s *secrets) String(text string) string { return s.now().String(s.known.String(text)) }

// Value returns a copy of v with every secret replaced (redact.Redactor.Value).
func (s *secrets) Value(v any) any { return s.now().Value(s.known.Value(v)) }

// Error returns err with every secret removed (redact.Redactor.Error).
func (s *secrets) Error(err error) error { return s.now().Error(s.known.Error(err)) }

// redactor is a worker interceptor that removes secrets from everything
// an activity sends to Temporal: its result, its error and its heartbeat
// details. RunIteration redacts its own output too; this covers every
// activity, present and future.
type redactor struct {
	interceptor.WorkerInterceptorBase
	r *secrets
}

func (w *redactor) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	in := &redactInbound{r: w.r}
	in.Next = next
	return in
}

type redactInbound struct {
	interceptor.ActivityInboundInterceptorBase
	r *secrets
}

func (a *redactInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	out := &redactOutbound{r: a.r}
	out.Next = outbound
	return a.Next.Init(out)
}

func (a *redactInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := a.Next.ExecuteActivity(ctx, in)
	return a.r.Value(res), a.r.Error(permanent(err))
}

// permanent is err, non-retryable when it wraps an error that is: an
// activity's "build prompt: %w" around a task file that cannot be read
// would otherwise reach Temporal as a retryable error (its outermost),
// and be tried again for nothing. The inner error stays its cause, with
// its type and details.
func permanent(err error) error {
	var appErr *temporal.ApplicationError
	if err == nil || !errors.As(err, &appErr) || !appErr.NonRetryable() {
		return err
	}
	if top, ok := err.(*temporal.ApplicationError); ok && top == appErr {
		return err
	}
	msg := strings.TrimSuffix(err.Error(), appErr.Error()) + appErr.Message()
	return temporal.NewNonRetryableApplicationError(msg, appErr.Type(), appErr)
}

type redactOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	r *secrets
}

func (o *redactOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	for i := range details {
		details[i] = o.r.Value(details[i])
	}
	o.Next.RecordHeartbeat(ctx, details...)
}
