package config

import (
	"fmt"
	"net"
	"strings"
)

// Notices returns the lines a command prints when it starts: that the
// agent command comes from the workspace's ralph.yaml, which the repository
// controls, and warnings about servers that listen beyond this machine.
func (c Config) Notices() []string {
	var notices []string
	if c.agentCommandFile != "" {
		notices = append(notices, fmt.Sprintf("using agent command %s from %s",
			formatValue(c.Agent.Command), c.agentCommandFile))
	}
	for _, key := range c.roleCommandKeys {
		command := c.Roles.Planner.Command
		if key == "roles.reviewer.command" {
			command = c.Roles.Reviewer.Command
		}
		notices = append(notices, fmt.Sprintf("using %s %s from %s", key, formatValue(command), c.roleCommandFile))
	}
	if c.Dev.Enabled && !isLoopback(c.Dev.IP) {
		what := "the embedded Temporal server listens"
		if c.Dev.UIPort != 0 {
			what = "the embedded Temporal server and UI listen"
		}
		notices = append(notices, fmt.Sprintf("warning: %s on %s, beyond this machine: "+
			"it has no authentication, so anyone who can reach it can start sessions that run any agent command as this user",
			what, c.Dev.IP))
	}
	if host, _, err := net.SplitHostPort(c.Codec.Server); err == nil && !isLoopback(host) {
		if host == "" {
			host = "every interface"
		}
		notices = append(notices, fmt.Sprintf("warning: the codec server listens on %s, beyond this machine: "+
			"it has no authentication, so anyone who can reach it can decrypt what sessions store in Temporal",
			host))
	}
	return notices
}

// isLoopback reports whether host, an IP address or "localhost", is only
// reachable from this machine. Unspecified addresses such as 0.0.0.0 and ::
// are every interface, not loopback.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
