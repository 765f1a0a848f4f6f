package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// validate reports every invalid setting of c, one error per setting.
func (c *Config) validate() error {
	var errs []error
	check := func(key string, bad bool, value any, reason string) {
		if bad {
			errs = append(errs, &fieldError{spec: lookupSpec(key), value: value, reason: reason})
		}
	}
	const (
		notEmpty   = "must not be empty"
		atLeastOne = "must be at least 1"
	)

	check("task-queue", strings.TrimSpace(c.TaskQueue) == "", c.TaskQueue, notEmpty)

	check("agent.command", len(c.Agent.Command) == 0, c.Agent.Command, notEmpty)
	check("agent.max-turns", c.Agent.MaxTurns < 0, c.Agent.MaxTurns, "must not be negative (0 = unlimited)")
	for _, entry := range c.Agent.Env {
		name, _, _ := strings.Cut(entry, "=")
		if !envNameRE.MatchString(name) {
			check("agent.env", true, c.Agent.Env,
				fmt.Sprintf("entry %q must be NAME or NAME=value, where NAME is letters, digits and _, not starting with a digit", entry))
			break
		}
	}

	check("task.mode", c.Task.Mode != "" && !slices.Contains(taskModes, c.Task.Mode), c.Task.Mode,
		fmt.Sprintf("must be one of %s, or empty to detect it", strings.Join(taskModes, ", ")))

	l := &c.Limits
	check("limits.max-iterations", l.MaxIterations < 1, l.MaxIterations, atLeastOne)
	check("limits.max-runtime", l.MaxRuntime < 0, l.MaxRuntime, "must not be negative (0 = no limit)")
	switch {
	case math.IsNaN(l.MaxCostUSD) || math.IsInf(l.MaxCostUSD, 0):
		check("limits.max-cost-usd", true, l.MaxCostUSD, "must be a finite number")
	case l.MaxCostUSD < 0:
		check("limits.max-cost-usd", true, l.MaxCostUSD, "must not be negative (0 = no limit)")
	}
	check("limits.max-consecutive-failures", l.MaxConsecutiveFailures < 1, l.MaxConsecutiveFailures, atLeastOne)
	check("limits.max-no-progress", l.MaxNoProgress < 1, l.MaxNoProgress, atLeastOne)
	check("limits.max-task-file-repairs", l.MaxTaskFileRepairs < 1, l.MaxTaskFileRepairs, atLeastOne)
	check("limits.heartbeat-timeout", l.HeartbeatTimeout < time.Second, l.HeartbeatTimeout, "must be at least 1s")
	check("limits.iteration-timeout", l.IterationTimeout <= l.HeartbeatTimeout, l.IterationTimeout,
		fmt.Sprintf("must be longer than limits.heartbeat-timeout (%s)", shortDuration(l.HeartbeatTimeout)))
	check("limits.iterations-per-run", l.IterationsPerRun < 1, l.IterationsPerRun, atLeastOne)

	cp := &c.Checkpoint
	check("checkpoint.every", cp.Every < 0, cp.Every, "must not be negative (0 = no checkpoints)")
	check("checkpoint.timeout", cp.Timeout < 0, cp.Timeout, "must not be negative (0 = no limit)")
	check("checkpoint.on-timeout", !slices.Contains(onTimeoutActions, cp.OnTimeout), cp.OnTimeout,
		fmt.Sprintf("must be one of %s", strings.Join(onTimeoutActions, ", ")))

	d := &c.Dev
	_, err := netip.ParseAddr(d.IP)
	check("dev.ip", err != nil, d.IP, "must be an IP address such as 127.0.0.1")
	check("dev.port", d.Port < 1 || d.Port > 65535, d.Port, "must be between 1 and 65535")
	check("dev.ui-port", d.UIPort < 0 || d.UIPort > 65535, d.UIPort, "must be between 1 and 65535, or 0 for no UI")
	check("dev.ui-port", d.UIPort != 0 && d.UIPort == d.Port, d.UIPort, "must differ from dev.port")
	check("dev.namespace", strings.TrimSpace(d.Namespace) == "", d.Namespace, notEmpty)

	cd := &c.Codec
	keyFile := lookupSpec("codec.key-file")
	check("codec.key-env", cd.KeyEnv != "" && cd.KeyFile != "", cd.KeyEnv,
		fmt.Sprintf("must not be set together with codec.key-file (--%s, %s): choose one", keyFile.flag, keyFile.env()))
	check("codec.key-env", cd.KeyEnv != "" && !envNameRE.MatchString(cd.KeyEnv), cd.KeyEnv,
		"must be the name of an environment variable: letters, digits and _, not starting with a digit")
	if cd.Server != "" {
		_, port, err := net.SplitHostPort(cd.Server)
		n, perr := strconv.Atoi(port)
		switch {
		case err != nil:
			check("codec.server", true, cd.Server, "must be host:port, such as 127.0.0.1:8081")
		case perr != nil || n < 1 || n > 65535:
			check("codec.server", true, cd.Server, "must have a port between 1 and 65535")
		}
	}

	return errors.Join(errs...)
}
