package activities

import (
	"os"
	"slices"
	"strings"
)

// agentEnvNames are the worker's variables an agent gets: what a shell
// and its tools need, and the agent CLIs' own provider settings.
var agentEnvNames = []string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TMPDIR", "SHELL", "TZ",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"IS_SANDBOX",
}

// agentEnvPrefixes are prefixes of variable names an agent gets.
var agentEnvPrefixes = []string{
	"LC_", "XDG_",
	"ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_",
}

// AgentEnvAllowed reports whether the agent gets the worker's variable
// called name without agent.env naming it.
func AgentEnvAllowed(name string) bool {
	if slices.Contains(agentEnvNames, name) {
		return true
	}
	for _, p := range agentEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// AgentEnv is the environment of an agent process: the allowed variables
// of environ, then extra, whose entries are NAME (the variable of environ
// with that name, if set) or NAME=value. Everything else of the worker's
// environment (GITHUB_TOKEN, AWS_*, TEMPORAL_*, …) stays out.
func AgentEnv(environ, extra []string) []string {
	var env []string
	lookup := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		lookup[name] = value
		if AgentEnvAllowed(name) {
			env = append(env, kv)
		}
	}
	for _, e := range extra {
		if strings.Contains(e, "=") {
			env = append(env, e)
		} else if v, ok := lookup[e]; ok {
			env = append(env, e+"="+v)
		}
	}
	return env
}

// agentEnv is the environment of this Agent's agent processes.
func (a *Agent) agentEnv() []string {
	return AgentEnv(os.Environ(), a.Env)
}
