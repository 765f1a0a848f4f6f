package activities

import (
	"fmt"
	"strings"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/claude"
	"github.com/durable-ralph/ralph/agent/codex"
	"github.com/durable-ralph/ralph/agent/command"
	"github.com/durable-ralph/ralph/agent/gemini"
	"github.com/durable-ralph/ralph/contract"
)

// DefaultBackend is the backend of an empty AgentSettings.Backend.
const DefaultBackend = "claude"

// backends are the kinds of agent Ralph runs, by name.
var backends = []agent.Backend{
	claude.Backend{},
	codex.Backend{},
	gemini.Backend{},
	command.Backend{},
}

// Backends are the names of the backends, in the order of the docs.
func Backends() []string {
	names := make([]string, len(backends))
	for i, b := range backends {
		names[i] = b.Name()
	}
	return names
}

// BackendOf returns the backend named name; "" is DefaultBackend.
func BackendOf(name string) (agent.Backend, error) {
	if name == "" {
		name = DefaultBackend
	}
	for _, b := range backends {
		if b.Name() == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("unknown agent backend %q (want one of %s)", name, strings.Join(Backends(), ", "))
}

// backendOptions are the settings of s a backend reads.
func backendOptions(s contract.AgentSettings) agent.Options {
	return agent.Options{
		Model:     s.Model,
		MaxTurns:  s.MaxTurns,
		ExtraArgs: s.ExtraArgs,
		Prices:    agent.DefaultPrices.Merge(s.Prices),
	}
}
