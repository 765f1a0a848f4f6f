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

// JoinTimes is how long putting a run's first process into a fresh
// control group of its run took, n times, 30 ms apart as a session's runs
// are (the kernel may let a move within a grace period of another skip
// its wait): moved is moving the live process (cgroup.procs), born is
// starting it from the spawner within the group (startIn), which on v2
// falls back to moving it. Nil where runs get no control group.
func JoinTimes(b *Bubblewrap, n int) (moved, born []time.Duration, err error) {
	if !b.cgroups.usable() {
		return nil, nil, nil
	}
	for range n {
		for _, spawn := range []bool{false, true} {
			time.Sleep(30 * time.Millisecond)
			g, err := b.cgroups.make(Limits{}.withDefaults())
			if err != nil {
				return nil, nil, err
			}
			cmd := exec.Command("sleep", "10")
			start := time.Now()
			if spawn {
				var in bool
				if in, err = g.startIn(cmd); err == nil && !in {
					err = g.join(cmd.Process.Pid)
				}
				born = append(born, time.Since(start))
			} else if err = cmd.Start(); err == nil {
				start = time.Now()
				err = g.join(cmd.Process.Pid)
				moved = append(moved, time.Since(start))
			}
			if cmd.Process != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
			g.remove()
			if err != nil {
				return nil, nil, err
			}
		}
	}
	return moved, born, nil
}
