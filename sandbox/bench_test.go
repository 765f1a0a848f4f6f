package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/egress"
	"github.com/durable-ralph/ralph/process"
	"github.com/durable-ralph/ralph/sandbox"
)

// BenchmarkStart measures what containing one agent run costs: starting
// /bin/true bare, in a sandbox without network, and in one whose network
// goes through a fresh egress proxy (what an iteration on the default
// network pays: the proxy, bwrap, the run's control group, the bridge to
// the proxy, and the end of the run's leftovers by process.Run): the
// worker's own listener where it may enter the run's network namespace
// (root), and socat inside.
func BenchmarkStart(b *testing.B) {
	f := benchFixture(b)
	bare := timeRuns(b, func() *exec.Cmd { return exec.Command("/bin/true") })
	fmt.Printf("FIGURE sandbox_start_ms bare %.2f\n", ms(bare))
	// The part of a start that is the kernel's: putting the run's first
	// process into its control group. Moving it there waits for an RCU
	// grace period; starting it from a thread already there (v1) does
	// not (the start of the process is counted in that figure).
	if moved, born, err := sandbox.JoinTimes(box(b), 20); err == nil && len(moved) > 0 {
		for _, f := range []struct {
			name  string
			times []time.Duration
		}{{"moved", moved}, {"born there (started from within)", born}} {
			slices.Sort(f.times)
			fmt.Printf("FIGURE sandbox_cgroup_join_ms p50 %.2f p90 %.2f max %.2f: %s\n",
				ms(f.times[len(f.times)/2]), ms(f.times[len(f.times)*9/10]), ms(f.times[len(f.times)-1]), f.name)
		}
	}
	for _, name := range []string{sandbox.NetNone, sandbox.NetInternet, sandbox.NetInternet + "-socat"} {
		network, socat := strings.CutSuffix(name, "-socat")
		b.Run(name, func(b *testing.B) {
			box := box(b)
			switch {
			case socat && !box.EntersNet():
				b.Skip("the internet run bridges with socat already")
			case socat:
				box = sandbox.WithSocatBridge(box)
			}
			if box.ProxyProblem(network) != nil {
				b.Skip("socat is not installed")
			}
			var d time.Duration
			for range b.N {
				spec := f.spec(network)
				var p *egress.Proxy
				start := time.Now()
				switch {
				case sandbox.Proxied(network) && box.ServesProxy():
					var err error
					p, err = egress.New(egress.Policy{Internet: true})
					require.NoError(b, err)
					spec.ProxyServe = p.Serve
				case sandbox.Proxied(network):
					var err error
					spec.ProxySocket = filepath.Join(b.TempDir(), "egress.sock")
					p, err = egress.Listen(spec.ProxySocket, egress.Policy{Internet: true})
					require.NoError(b, err)
				}
				c, err := box.Wrap(spec, sandbox.Command{Path: "/bin/true", Env: []string{"PATH=/usr/bin:/bin", "HOME=" + f.home}})
				require.NoError(b, err)
				// As an iteration runs it: through process.Run, which
				// also ends what the run left behind.
				res, err := process.Run(context.Background(), process.Spec{Path: c.Path, Args: c.Args, Env: c.Env, Guarded: c.Guarded,
					ExtraFiles: c.Files, Ready: c.Ready})
				c.Release()
				require.NoError(b, err)
				require.NoError(b, res.Err, res.Stderr)
				if p != nil {
					require.NoError(b, p.Close())
				}
				d += time.Since(start)
			}
			per := d / time.Duration(b.N)
			b.ReportMetric(ms(per), "ms/start")
			fmt.Printf("FIGURE sandbox_start_ms %s %.2f (bare %.2f, so %.2f ms per contained run)\n", name, ms(per), ms(bare), ms(per-bare))
		})
	}
}

// benchFixture is newFixture for a benchmark.
func benchFixture(b *testing.B) fixture {
	root := b.TempDir()
	f := fixture{home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws")}
	for _, d := range []string{f.home, f.ws} {
		require.NoError(b, os.MkdirAll(d, 0o755))
	}
	return f
}

// timeRuns is the mean time of 20 runs of the command cmd makes.
func timeRuns(b *testing.B, cmd func() *exec.Cmd) time.Duration {
	start := time.Now()
	for range 20 {
		require.NoError(b, cmd().Run())
	}
	return time.Since(start) / 20
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
