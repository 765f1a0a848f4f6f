package testsuite_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// latencyRounds is how many times each latency below is taken; the
// median and the range are printed.
var latencyRounds = envInt("RALPH_BENCH_LATENCY_ROUNDS", 3)

// BenchmarkRecovery measures what a user waits after the worker dies with
// kill -9 while an agent runs (an 8-second iteration of the real worker
// binary, on its own server): from the kill to the agent running again,
// and from the start of the new worker process to then. A new worker
// finds the dead one's attempt in its state directory, fails it by its
// task token with no retry delay and runs the retry at once (app/attempts.go).
func BenchmarkRecovery(b *testing.B) {
	for range b.N {
		var fromKill, fromStart []time.Duration
		for range latencyRounds {
			k, w2, restarted := killWorker(b, map[string]any{
				"steps": []any{map[string]any{"auto": true, "sleep_ms": 8000}}, "repeat": "auto",
			}, time.Second)
			waitFor(b, time.Minute, "the iteration to run again", func() bool { return len(calls(b, k.env)) >= 2 })
			again := calls(b, k.env)[1].Time
			fromKill = append(fromKill, again.Sub(k.killed))
			fromStart = append(fromStart, again.Sub(restarted))
			// The next round on an idle machine.
			_ = w2.cmd.Process.Kill()
			w2.wait(b, time.Minute)
		}
		fmt.Printf("recovery after kill -9 of the worker, %d rounds: kill to the agent running again %s; the new worker's start to then %s\n",
			latencyRounds, spread(fromKill), spread(fromStart))
		b.ReportMetric(median(fromKill).Seconds(), "kill-to-agent-s")
		b.ReportMetric(median(fromStart).Seconds(), "start-to-agent-s")
	}
}

// BenchmarkFirstPrompt measures what `starter run DIR` costs before the
// agent gets its first prompt: warm, with `worker --dev` (and so its dev
// server) already running, and cold, with nothing running, where
// `starter run --dev` starts the dev server and runs the session's worker
// itself. Each round is a new workspace; the time is from the start of
// the starter process to the agent's process starting (the fake agent
// records when it started).
func BenchmarkFirstPrompt(b *testing.B) {
	for range b.N {
		warmEnv := newStarterEnv(b, rawScenario(b, map[string]any{"steps": []any{map[string]any{"auto": true}}, "repeat": "auto"}))
		startDevWorkerTB(b, warmEnv)
		var warm, cold []time.Duration
		for range latencyRounds {
			warm = append(warm, firstPrompt(b, warmEnv, "run", "--dev"))
		}
		for range latencyRounds {
			se := newStarterEnv(b, rawScenario(b, map[string]any{"steps": []any{map[string]any{"auto": true}}, "repeat": "auto"}))
			cold = append(cold, firstPrompt(b, se, "run", "--dev"))
			stopDevServer(b, se.stateDir)
		}
		fmt.Printf("starter run to the agent's first prompt, %d rounds: worker and dev server already up %s; nothing running yet (starter run --dev starts both) %s\n",
			latencyRounds, spread(warm), spread(cold))
		b.ReportMetric(median(warm).Seconds(), "warm-s")
		b.ReportMetric(median(cold).Seconds(), "cold-s")
	}
}

// firstPrompt runs `starter ARGS DIR` on a new workspace and returns the
// time from its start to its agent's first start; it waits for the
// starter to exit (a session of one instant story).
func firstPrompt(b *testing.B, se *starterEnv, args ...string) time.Duration {
	b.Helper()
	r := newRepo(b, map[string]string{"prd.json": oneStoryPRD, "progress.txt": ""})
	start := time.Now()
	p := startProc(b, se.env, bins.starter, append(args, r.Dir)...)
	var first time.Time
	waitFor(b, time.Minute, "the agent's first prompt", func() bool {
		cs := callsIn(b, se, r.Dir)
		if len(cs) == 0 {
			return false
		}
		first = cs[0].Time
		return true
	})
	require.Equal(b, 0, p.wait(b, 2*time.Minute), p.Output())
	return first.Sub(start)
}

// startDevWorkerTB starts `worker --dev` of se and waits until it polls.
func startDevWorkerTB(b testing.TB, se *starterEnv) *proc {
	b.Helper()
	w := startProc(b, se.env, bins.worker, "--dev")
	waitFor(b, 2*time.Minute, "worker --dev to poll", func() bool { return strings.Contains(w.Output(), "Worker polling") })
	return w
}

// median is the middle of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// spread is "median M (min–max)" of ds.
func spread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	return fmt.Sprintf("median %s (%s–%s)", r(s[len(s)/2]), r(s[0]), r(s[len(s)-1]))
}
