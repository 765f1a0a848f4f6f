package config

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/durable-ralph/ralph/contract"
)

// resolveKeyFile expands a leading ~ in Codec.KeyFile,
// GitHub.TokenFile and GitHub.AppPrivateKeyFile.
func (c *Config) resolveKeyFile() error {
	for _, f := range []struct {
		key  string
		name *string
	}{
		{"codec.key-file", &c.Codec.KeyFile},
		{"github.token-file", &c.GitHub.TokenFile},
		{"github.app-private-key-file", &c.GitHub.AppPrivateKeyFile},
	} {
		name, err := expandHome(*f.name)
		if err != nil {
			return &fieldError{spec: lookupSpec(f.key), value: *f.name, reason: err.Error()}
		}
		*f.name = name
	}
	return nil
}

// expandHome replaces a leading ~ in name by the home directory.
func expandHome(name string) (string, error) {
	if name != "~" && !strings.HasPrefix(name, "~/") {
		return name, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot expand ~: %w", err)
	}
	return filepath.Join(home, name[1:]), nil
}

// resolveStateDir expands a leading ~ in Dev.StateDir and defaults it.
func (c *Config) resolveStateDir() error {
	s := lookupSpec("dev.state-dir")
	dir := c.Dev.StateDir
	if dir == "" {
		d, err := defaultStateDir()
		if err != nil {
			if !c.Dev.Enabled {
				// Nothing needs it; do not fail a worker without $HOME.
				return nil
			}
			return &fieldError{spec: s, value: dir, reason: fmt.Sprintf("has no default (%v): set it", err)}
		}
		c.Dev.StateDir = d
		return nil
	}
	expanded, err := expandHome(dir)
	if err != nil {
		return &fieldError{spec: s, value: dir, reason: err.Error()}
	}
	c.Dev.StateDir = expanded
	return nil
}

// DefaultStateDir is the state directory of the dev server when
// dev.state-dir is not set.
func DefaultStateDir() (string, error) { return defaultStateDir() }

// defaultStateDir returns $XDG_STATE_HOME/durable-ralph, or
// ~/.local/state/durable-ralph if XDG_STATE_HOME is unset or, against the
// XDG Base Directory Specification, relative.
func defaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, stateDirName), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", stateDirName), nil
}

// resolveHostID sets worker.host-id to the hostname when it is not set.
func (c *Config) resolveHostID() error {
	c.Worker.HostID = strings.TrimSpace(c.Worker.HostID)
	if c.Worker.HostID != "" {
		return nil
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		return fmt.Errorf("worker.host-id is not set and the hostname is unknown (%v): set --host-id or %s", err, lookupSpec("worker.host-id").env())
	}
	c.Worker.HostID = name
	return nil
}

// backendCLIs are the agent.backend values and the CLI each runs when
// agent.command is not set; the command backend has none.
var backendCLIs = map[string]string{"claude": "claude", "codex": "codex", "gemini": "gemini", "command": ""}

// backendNames are the agent.backend values, in the order of the docs.
var backendNames = []string{"claude", "codex", "gemini", "command"}

// BackendNames are the values agent.backend accepts.
func BackendNames() []string { return append([]string(nil), backendNames...) }

// resolveAgentCommand sets agent.command to the backend's CLI when it is
// not set.
func (c *Config) resolveAgentCommand() error {
	if len(c.Agent.Command) > 0 {
		return nil
	}
	cli := backendCLIs[c.Agent.Backend]
	if cli == "" {
		return &fieldError{spec: lookupSpec("agent.command"), value: c.Agent.Command,
			reason: "must be set when agent.backend is command: the command line of the agent to loop, such as [my-agent, --flag]"}
	}
	c.Agent.Command = []string{cli}
	return nil
}

// PriceTable is agent.prices as a table.
func (a AgentConfig) PriceTable() (contract.Prices, error) {
	return parsePrices(a.Prices)
}

// parsePrices reads MODEL=INPUT/CACHED/OUTPUT or MODEL=INPUT/OUTPUT
// entries, in US dollars per million tokens.
func parsePrices(entries []string) (contract.Prices, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	prices := contract.Prices{}
	for _, e := range entries {
		model, spec, ok := strings.Cut(e, "=")
		model = strings.ToLower(strings.TrimSpace(model))
		parts := strings.Split(spec, "/")
		if !ok || model == "" || (len(parts) != 2 && len(parts) != 3) {
			return nil, fmt.Errorf("entry %q must be MODEL=INPUT/CACHED/OUTPUT or MODEL=INPUT/OUTPUT, in US dollars per million tokens", e)
		}
		nums := make([]float64, len(parts))
		for i, p := range parts {
			n, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || n < 0 || math.IsNaN(n) || math.IsInf(n, 0) {
				return nil, fmt.Errorf("entry %q: %q is not a price (a number of US dollars, at least 0)", e, p)
			}
			nums[i] = n
		}
		p := contract.Price{Input: nums[0], Output: nums[len(nums)-1]}
		if len(nums) == 3 {
			p.CachedInput = nums[1]
		}
		prices[model] = p
	}
	return prices, nil
}
