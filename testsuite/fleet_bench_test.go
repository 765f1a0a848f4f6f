package testsuite_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	tcluster "github.com/durable-ralph/ralph/testsuite/cluster"
	"github.com/durable-ralph/ralph/workflows/session"
)

// BenchmarkFleet is `make bench-fleet`, not part of `make bench` (it
// runs only with RALPH_BENCH_FLEET=1): short sessions on the cluster the
// fleet tests start (PostgreSQL, a Temporal server process on it) with
// RALPH_BENCH_FLEET_WORKERS worker processes (default 3, host IDs of
// their own). For each concurrency in RALPH_BENCH_FLEET_LEVELS (default
// 10,40,160: at most that many sessions running at once, the next started
// as one ends), RALPH_BENCH_FLEET_SESSIONS sessions (default 1000) of
// RALPH_BENCH_FLEET_ITERATIONS iterations each (default 2) of an instant
// agent run to their iteration limit, each in a workspace of its own on
// one of the hosts. It prints, per level, the throughput (iterations per
// second, first start to last end), the schedule-to-start of the
// iterations' activities and of the sessions' workflow tasks (p50 and
// p99, from the histories), the CPU of the workers and their agents, and
// how much the two databases grew per 1,000 iterations. The level past
// which the throughput stops rising while the schedule-to-start climbs
// is the knee.
func BenchmarkFleet(b *testing.B) {
	if os.Getenv("RALPH_BENCH_FLEET") == "" {
		b.Skip("the fleet benchmark runs with RALPH_BENCH_FLEET=1 (make bench-fleet)")
	}
	var levels []int
	for _, f := range strings.Split(envOr("RALPH_BENCH_FLEET_LEVELS", "10,40,160"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err, "RALPH_BENCH_FLEET_LEVELS")
		levels = append(levels, n)
	}
	fl := &fleetBench{
		scaleBench: &scaleBench{iterations: envInt("RALPH_BENCH_FLEET_ITERATIONS", 2)},
		sessions:   envInt("RALPH_BENCH_FLEET_SESSIONS", 1000),
	}
	fl.template = fl.templateRepo(b)
	fl.scenario = rawScenario(b, map[string]any{"steps": []any{map[string]any{"counter_file": scaleCounter}}})
	fl.pg = tcluster.StartPostgres(b)
	fl.srv = tcluster.StartServer(b, fl.pg, tcluster.Options{SearchAttributes: app.SearchAttributes(), LogLevel: "error"})
	fl.c = fl.srv.Dial(b)
	for i := range envInt("RALPH_BENCH_FLEET_WORKERS", 3) {
		fl.workers = append(fl.workers, fl.startWorker(b, fmt.Sprintf("fleet-%d", i)))
	}
	for range b.N {
		for _, level := range levels {
			r := fl.run(b, level)
			fmt.Printf("fleet, %d workers, %d sessions of %d iterations, at most %d at once: %.1f iterations/s (%d in %.1f s); activity schedule-to-start p50 %.0f ms, p99 %.0f ms; workflow task schedule-to-start p50 %.0f ms, p99 %.0f ms; CPU %.1f ms per iteration in the workers and %.1f in agents and git, the machine's CPU %.0f%% busy; database +%.1f MiB per 1,000 iterations (history +%.1f, visibility +%.1f)\n",
				len(fl.workers), fl.sessions, fl.iterations, level, r.throughput(), r.iterations, r.elapsed.Seconds(),
				ms(percentile(r.activityWait, 50)), ms(percentile(r.activityWait, 99)),
				ms(percentile(r.taskWait, 50)), ms(percentile(r.taskWait, 99)),
				1000*r.cpu.self/float64(r.iterations), 1000*r.cpu.children/float64(r.iterations), 100*r.busy,
				r.perThousand(r.historyBytes+r.visibilityBytes), r.perThousand(r.historyBytes), r.perThousand(r.visibilityBytes))
			b.ReportMetric(r.throughput(), fmt.Sprintf("iter/s@%d", level))
		}
	}
}

// fleetBench is the cluster and workers of BenchmarkFleet.
type fleetBench struct {
	*scaleBench
	sessions int
	pg       *tcluster.Postgres
	srv      *tcluster.Server
	c        client.Client
	workers  []*fleetWorker
}

// fleetWorker is one worker process and its host ID.
type fleetWorker struct {
	host string
	proc *proc
}

// startWorker starts a worker process of host on the cluster, allowed as
// many agents as there are sessions, and waits until it polls.
func (fl *fleetBench) startWorker(b *testing.B, host string) *fleetWorker {
	b.Helper()
	env := []string{
		"PATH=" + bins.dir + ":" + getenv("PATH"),
		"HOME=" + b.TempDir(),
		"TEMPORAL_ADDRESS=" + fl.srv.HostPort(),
		"TEMPORAL_NAMESPACE=" + fl.srv.Namespace(),
		"RALPH_WORKER_HOST_ID=" + host,
		"RALPH_WORKER_MAX_AGENTS=" + strconv.Itoa(fl.sessions),
		"RALPH_AGENT_ENV=FAKE_CLAUDE_SCENARIO",
		"FAKE_CLAUDE_SCENARIO=" + fl.scenario,
	}
	w := &fleetWorker{host: host, proc: startProc(b, env, bins.worker)}
	waitFor(b, time.Minute, "the worker of "+host, func() bool { return strings.Contains(w.proc.Output(), "Worker polling") })
	return w
}

// fleetRun is what one level measured.
type fleetRun struct {
	iterations                    int
	elapsed                       time.Duration
	activityWait, taskWait        []time.Duration
	cpu                           cpuTimes // of the workers
	busy                          float64  // the machine's CPU busy, 0 to 1
	historyBytes, visibilityBytes int64
}

func (r fleetRun) throughput() float64 { return float64(r.iterations) / r.elapsed.Seconds() }

// perThousand is bytes per 1,000 iterations, in MiB.
func (r fleetRun) perThousand(bytes int64) float64 {
	return float64(bytes) / (1 << 20) / float64(r.iterations) * 1000
}

// run runs fl.sessions sessions, at most level at once, spread over the
// hosts in turn.
func (fl *fleetBench) run(b *testing.B, level int) fleetRun {
	b.Helper()
	dirs := fl.workspaces(b, fl.sessions)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	hist0, vis0 := fl.dbSize(b, "temporal"), fl.dbSize(b, "temporal_visibility")
	cpu0 := fl.workersCPU(b)
	busy0, total0 := machineCPU(b)
	ids := make([]string, len(dirs))
	errs := make([]error, len(dirs))
	slots := make(chan struct{}, level)
	var wg sync.WaitGroup
	start := time.Now()
	for i, dir := range dirs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			in := fl.input(dir)
			in.Host = fl.workers[i%len(fl.workers)].host
			ids[i] = contract.SessionWorkflowID(in.Host, dir)
			r, err := fl.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: ids[i], TaskQueue: contract.TaskQueue}, session.Session, in)
			if err == nil {
				var res contract.SessionResult
				if err = r.Get(ctx, &res); err == nil && res.Reason != contract.ReasonMaxIterations {
					err = fmt.Errorf("ended %s: %s", res.Reason, res.Message)
				}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	run := fleetRun{elapsed: time.Since(start), iterations: len(dirs) * fl.iterations}
	cpu := fl.workersCPU(b)
	run.cpu = cpu.sub(cpu0)
	busy, total := machineCPU(b)
	run.busy = (busy - busy0) / (total - total0)
	for i, err := range errs {
		require.NoError(b, err, "session %s", ids[i])
		fl.checkCounter(b, dirs[i], "")
	}
	run.historyBytes = fl.dbSize(b, "temporal") - hist0
	run.visibilityBytes = fl.dbSize(b, "temporal_visibility") - vis0
	run.activityWait, run.taskWait = fl.scheduleToStart(b, ids)
	return run
}

// dbSize is the size of database on disk, in bytes.
func (fl *fleetBench) dbSize(b *testing.B, database string) int64 {
	b.Helper()
	out, err := fl.pg.Query(context.Background(), "postgres", fmt.Sprintf("SELECT pg_database_size('%s')", database))
	require.NoError(b, err)
	n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(b, err, "pg_database_size: %q", out)
	return n
}

// machineCPU reads the first line of /proc/stat: the ticks of every CPU
// spent busy (all but idle and iowait) and in all.
func machineCPU(b *testing.B) (busy, total float64) {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	require.NoError(b, err)
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	require.Greater(b, len(f), 5, "/proc/stat: %q", line)
	for i, v := range f[1:] {
		n, err := strconv.ParseFloat(v, 64)
		require.NoError(b, err, "/proc/stat: %q", line)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// workersCPU sums the CPU times of the worker processes.
func (fl *fleetBench) workersCPU(b *testing.B) cpuTimes {
	b.Helper()
	var sum cpuTimes
	for _, w := range fl.workers {
		c, err := procCPU(w.proc.cmd.Process.Pid)
		require.NoError(b, err)
		sum.self += c.self
		sum.children += c.children
	}
	return sum
}

// scheduleToStart reads, from the histories of ids, the time each
// activity and each workflow task waited between its scheduling and its
// start.
func (fl *fleetBench) scheduleToStart(b *testing.B, ids []string) (activities, tasks []time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, id := range ids {
		h, err := collectHistory(fl.c.GetWorkflowHistory(ctx, id, "", false, 0))
		require.NoError(b, err)
		at := map[int64]time.Time{}
		for _, e := range h.Events {
			at[e.GetEventId()] = e.GetEventTime().AsTime()
			if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
				activities = append(activities, e.GetEventTime().AsTime().Sub(at[a.GetScheduledEventId()]))
			}
			if w := e.GetWorkflowTaskStartedEventAttributes(); w != nil {
				tasks = append(tasks, e.GetEventTime().AsTime().Sub(at[w.GetScheduledEventId()]))
			}
		}
	}
	slices.Sort(activities)
	slices.Sort(tasks)
	return activities, tasks
}
