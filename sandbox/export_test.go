package sandbox

import (
	"os/exec"
	"time"
)

// WithSocatBridge is b bridging its runs' loopback to the egress proxy
// with socat inside, as a worker that may not enter a run's network
// namespace does, even where this one may.
func WithSocatBridge(b *Bubblewrap) *Bubblewrap {
	c := *b
	c.entersNet = false
	return &c
}

// EntersNet reports whether the worker listens inside its runs' network
// namespaces.
func (b *Bubblewrap) EntersNet() bool { return b.entersNet }

// JoinTimes is how long moving a live process into a fresh control
// group of a run took, n times (what each contained run's start waits
// for in the kernel); nil where runs get no control group.
func JoinTimes(b *Bubblewrap, n int) ([]time.Duration, error) {
	if !b.cgroups.usable() {
		return nil, nil
	}
	var out []time.Duration
	for range n {
		cmd := exec.Command("sleep", "10")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		g, err := b.cgroups.make(Limits{}.withDefaults())
		if err == nil {
			start := time.Now()
			err = g.join(cmd.Process.Pid)
			out = append(out, time.Since(start))
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		g.remove()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
