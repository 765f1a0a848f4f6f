// Package metrics is what a worker serves to Prometheus: the Temporal
// SDK's own worker metrics, through the SDK's OpenTelemetry metrics
// handler, and Durable Ralph's metrics of iterations, cost, tokens, agents
// and sessions, all on one registry served as Prometheus text.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/converter"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

// Metrics holds a worker's metrics.
type Metrics struct {
	reg        *prometheus.Registry
	provider   *sdkmetric.MeterProvider
	handler    client.MetricsHandler
	iterations *prometheus.CounterVec
	cost       prometheus.Counter
	tokens     *prometheus.CounterVec
}

// New creates the registry, the SDK's metrics handler on it and Ralph's
// own metrics.
func New() (*Metrics, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	m := &Metrics{
		reg:      reg,
		provider: provider,
		handler: temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
			Meter: provider.Meter("temporal-sdk-go"),
			// The handler's default panics; a metric is never worth a
			// worker.
			OnError: func(err error) { slog.Warn("metrics", "error", err) },
		}),
		iterations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ralph_iterations_total",
			Help: "Iterations this worker ran to a result, by outcome (success, rate_limited, agent_error, timeout, …).",
		}, []string{"outcome"}),
		cost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ralph_agent_cost_usd_total",
			Help: "What the agents of this worker's iterations reported spending, in US dollars.",
		}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ralph_agent_tokens_total",
			Help: "Tokens the agents of this worker's iterations used, by kind (input, output, cache_read, cache_creation).",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.iterations, m.cost, m.tokens)
	return m, nil
}

// SDKHandler is the metrics handler for the worker's Temporal client
// (client.Options.MetricsHandler).
func (m *Metrics) SDKHandler() client.MetricsHandler { return m.handler }

// Registry is where every metric of the worker is registered.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveIteration counts a finished iteration.
func (m *Metrics) ObserveIteration(res contract.IterationResult) {
	outcome := string(res.Outcome)
	if outcome == "" {
		outcome = "unknown"
	}
	m.iterations.WithLabelValues(outcome).Inc()
	if res.CostUSD > 0 {
		m.cost.Add(res.CostUSD)
	}
	u := res.Usage
	for _, k := range []struct {
		kind string
		n    int64
	}{
		{"input", u.InputTokens}, {"output", u.OutputTokens},
		{"cache_read", u.CacheReadInputTokens}, {"cache_creation", u.CacheCreationInputTokens},
	} {
		if k.n > 0 {
			m.tokens.WithLabelValues(k.kind).Add(float64(k.n))
		}
	}
}

// WatchAgents exports the worker's agent slots: ralph_agents_running,
// ralph_agents_waiting and ralph_agents_max.
func (m *Metrics) WatchAgents(slots *activities.Slots) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ralph_agents_running",
			Help: "Agent processes this worker runs now.",
		}, func() float64 { return float64(slots.Running()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ralph_agents_waiting",
			Help: "Iterations waiting for an agent slot of this worker (worker.max-agents).",
		}, func() float64 { return float64(slots.Waiting()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ralph_agents_max",
			Help: "Agent slots of this worker (worker.max-agents).",
		}, func() float64 { return float64(slots.Max()) }),
	)
}

// WatchSessions exports ralph_sessions{state}: the open sessions whose
// workspace is on host, by state, as Temporal's visibility store knows
// them (the RalphHost and RalphStatus search attributes). A scrape reads
// them at most every refresh.
func (m *Metrics) WatchSessions(c client.Client, host string, refresh time.Duration) {
	m.reg.MustRegister(&sessions{c: c, host: host, refresh: refresh})
}

// Serve serves the metrics as Prometheus text at /metrics on addr until
// stop is called; it returns the address it listens on.
func (m *Metrics) Serve(addr string) (stop func(), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("worker.metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Warn("metrics server", "error", err)
		}
	}()
	return func() {
		_ = srv.Close()
		_ = m.provider.Shutdown(context.Background())
	}, ln.Addr().String(), nil
}

// sessions collects ralph_sessions from visibility.
type sessions struct {
	c       client.Client
	host    string
	refresh time.Duration

	mu     sync.Mutex
	at     time.Time
	counts map[string]int
}

var sessionsDesc = prometheus.NewDesc("ralph_sessions",
	"Open sessions whose workspace is on this worker's host, by state (from Temporal's visibility store).",
	[]string{"state"}, nil)

func (s *sessions) Describe(ch chan<- *prometheus.Desc) { ch <- sessionsDesc }

func (s *sessions) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil || time.Since(s.at) >= s.refresh {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		counts, err := s.count(ctx)
		cancel()
		if err != nil {
			slog.Warn("metrics: count sessions", "error", err)
		} else {
			s.counts, s.at = counts, time.Now()
		}
	}
	states := make([]string, 0, len(s.counts))
	for st := range s.counts {
		states = append(states, st)
	}
	sort.Strings(states)
	for _, st := range states {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(s.counts[st]), st)
	}
}

// count lists the open sessions of the host and counts their states.
func (s *sessions) count(ctx context.Context) (map[string]int, error) {
	query := fmt.Sprintf("WorkflowType = 'Session' AND ExecutionStatus = 'Running' AND RalphHost = '%s'", s.host)
	counts := map[string]int{}
	var token []byte
	for {
		resp, err := s.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 1000, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list sessions of host %s: %w", s.host, err)
		}
		for _, ex := range resp.GetExecutions() {
			state := "starting"
			if p := ex.GetSearchAttributes().GetIndexedFields()["RalphStatus"]; p != nil {
				var v string
				if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err == nil && v != "" {
					state = v
				}
			}
			counts[state]++
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return counts, nil
		}
	}
}
