package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/sandbox"
)

// fixFor says how to put right a cause a user can fix, by error type,
// when the message does not say it already (GitHubTokenMissing's names
// the variable to set, and where).
func fixFor(errType string) string {
	switch errType {
	case contract.ErrTypeInvalidTaskFile:
		return "Fix the task file where the message says (see Task files in docs/sessions.md for its format)."
	case contract.ErrTypeAgentNotFound, contract.ErrTypeAgentUnusable:
		// The failure's details name the backend (agentFix); a worker of
		// an older version sends none.
		return "Install the agent where the worker runs, or name another with --agent-command."
	case contract.ErrTypeInvalidAgentConfig:
		return "Set agent.command (--agent-command) to the agent's command line."
	case contract.ErrTypeSandboxUnavailable:
		return "Install bubblewrap and socat where the agents run (Debian/Ubuntu: sudo apt-get install bubblewrap socat; Fedora: sudo dnf install bubblewrap socat), " +
			"or give the session --sandbox auto (uncontained where agents cannot be contained) or --sandbox off."
	}
	return ""
}

// agentFix says how to install the agent a failure of ae is about, by
// its backend (the failure's contract.AgentProblem details); "" when ae
// is not about an agent or does not say which.
func agentFix(ae *temporal.ApplicationError) string {
	switch ae.Type() {
	case contract.ErrTypeAgentNotFound, contract.ErrTypeAgentUnusable:
	default:
		return ""
	}
	var p contract.AgentProblem
	if !ae.HasDetails() || ae.Details(&p) != nil || p.Binary == "" {
		return ""
	}
	return activities.AgentFix(p.Backend, p.Binary)
}

// isRootCause reports whether errors of type errType are the cause of a
// failure rather than a layer around it.
func isRootCause(errType string) bool {
	switch errType {
	case contract.ErrTypeInvalidTaskFile, contract.ErrTypeDirtyWorkspace,
		contract.ErrTypeInvalidWorkspace, contract.ErrTypeAgentNotFound, contract.ErrTypeAgentUnusable,
		contract.ErrTypeAgentPermanent, contract.ErrTypeInvalidAgentConfig,
		contract.ErrTypeInvalidInput, contract.ErrTypeSandboxUnavailable,
		contract.ErrTypeGitHubNoToken, contract.ErrTypeGitHubUnauthorized, contract.ErrTypeGitHubForbidden,
		contract.ErrTypeGitHubNotFound, contract.ErrTypeGitHubInvalid, contract.ErrTypeGitHubPreflight:
		return true
	}
	return false
}

// dialError is a failure to connect to the Temporal server at an
// address that accepts connections but does not answer as Temporal (an
// HTTP server, the Web UI's port, a proxy): explain names the address,
// where it came from and what to check.
type dialError struct {
	hostPort string
	// dev says the address is a dev server's.
	dev bool
	err error
}

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// dialFailed wraps the error of dialling hostPort (a dev server's when
// dev) for explain.
func dialFailed(hostPort string, dev bool, err error) error {
	return &dialError{hostPort: hostPort, dev: dev, err: err}
}

// addressSource says where the client's address came from, for a
// message about it: TEMPORAL_ADDRESS, a profile of the temporal CLI or
// the default.
func addressSource(getenv func(string) string, dev bool) (name, check string) {
	switch {
	case dev:
		return "the dev server (--dev)", "the dev server's port (--dev-port, RALPH_DEV_PORT): another program may hold it"
	case getenv("TEMPORAL_ADDRESS") != "":
		return "TEMPORAL_ADDRESS", "TEMPORAL_ADDRESS"
	case getenv("TEMPORAL_PROFILE") != "" || getenv("TEMPORAL_CONFIG_FILE") != "":
		return "the temporal CLI's profile", "the profile's address (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE)"
	}
	return "the default address", "that a Temporal server runs there, or set TEMPORAL_ADDRESS"
}

// explainConnection is what to print of a failure to reach the Temporal
// server, or "" when err is not one.
func explainConnection(getenv func(string) string, err error) string {
	if de, ok := errors.AsType[*dialError](err); ok {
		src, check := addressSource(getenv, de.dev)
		cause := de.err
		if inner := errors.Unwrap(cause); inner != nil {
			cause = inner // the SDK's words, without app.Dial's empty namespace
		}
		return fmt.Sprintf("cannot connect to Temporal at %s (from %s): something answers there, but not the gRPC API of a Temporal server (%s)\n"+
			"Check %s: it is the host:port of the Temporal frontend (port 7233 unless changed; not the Web UI, not an HTTP proxy), "+
			"with TEMPORAL_TLS=true for a server that wants TLS and TEMPORAL_NAMESPACE for a namespace other than default.",
			de.hostPort, src, words.Clip(cause.Error(), 300), check)
	}
	if errors.Is(err, app.ErrNoServer) {
		if addr := getenv("TEMPORAL_ADDRESS"); addr != "" {
			return fmt.Sprintf("no Temporal server answers at %s (from TEMPORAL_ADDRESS)\n"+
				"Check TEMPORAL_ADDRESS (host:port of the Temporal frontend, port 7233 unless changed) and that the server runs and is reachable from here; "+
				"unset it to use a dev server (--dev).", addr)
		}
	}
	return ""
}

// explain is what to print of a failure: its root cause, once, and how
// to fix it when that is known; with --verbose also the whole chain.
func (cctx *commandContext) explain(err error) string {
	if msg := explainConnection(os.Getenv, err); msg != "" {
		if cctx.verbose {
			msg += "\n\nThe whole error chain (--verbose):\n" + err.Error()
		}
		return msg
	}
	var outer, root *temporal.ApplicationError
	for e := err; e != nil; e = errors.Unwrap(e) {
		if ae, ok := e.(*temporal.ApplicationError); ok {
			if outer == nil {
				outer = ae
			}
			if root == nil && isRootCause(ae.Type()) {
				root = ae
			}
		}
	}
	if root == nil {
		root = outer
	}
	msg := err.Error()
	if root != nil {
		msg = root.Message()
		fix := fixFor(root.Type())
		if f := agentFix(root); f != "" {
			fix = f
		}
		if root.Type() == contract.ErrTypeInvalidTaskFile && strings.HasPrefix(msg, "no task file") {
			fix = "Write one: `starter init DIR` writes a commented ralph.yaml and an example prd.json (see Task files in docs/sessions.md)."
		}
		if fix != "" && !strings.Contains(msg, sandbox.InstallHint) {
			msg += "\n" + fix
		}
	}
	if cctx.verbose && msg != err.Error() {
		msg += "\n\nThe whole error chain (--verbose):\n" + err.Error()
	}
	return strings.TrimSpace(msg)
}
