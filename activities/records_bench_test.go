package activities

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/attempts"
)

// BenchmarkIterationRecords is the CPU of the files a worker writes for
// an iteration beside its agent's and git's: its records (the attempt's
// start, the agent's stream, the result; the last iteration's pruned)
// and the record of the running attempt (written as it starts and as its
// agent starts, removed at its end). Creating a file is what costs on
// some disks (internal/recycle): run it where the worker's state
// directory is (its files are in TMPDIR).
func BenchmarkIterationRecords(b *testing.B) {
	r := records{dir: b.TempDir()}
	d := &attempts.Dir{Path: filepath.Join(b.TempDir(), "attempts")}
	const key = "bench-session"
	res := contract.IterationResult{Iteration: 1, Outcome: contract.OutcomeSuccess, CostUSD: 0.01,
		FilesChanged: []string{"main.go", "progress.md"}, Commit: "0123456789abcdef0123456789abcdef01234567"}
	stream := bytes.Repeat([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"working on it"}]}}`+"\n"), 20)
	start := cpuTime()
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		r.prune(key, i)
		run, err := d.Start(attempts.Record{TaskToken: fmt.Appendf(nil, "token-%d", i), WorkflowID: "w", Attempt: 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.saveStart(key, i, contract.Progress{Iteration: i, Attempt: 1}); err != nil {
			b.Fatal(err)
		}
		f, err := r.createStream(key, i, 1)
		if err != nil {
			b.Fatal(err)
		}
		if err := run.Agent(os.Getpid()); err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(stream); err != nil {
			b.Fatal(err)
		}
		f.Close()
		res.Iteration = i
		if err := r.saveResult(key, i, res); err != nil {
			b.Fatal(err)
		}
		run.Done()
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/iteration")
}

// cpuTime is this process's CPU time, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
