package main

import (
	"errors"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

// fixFor says how to put right a cause a user can fix, by error type,
// when the message does not say it already.
func fixFor(errType string) string {
	switch errType {
	case contract.ErrTypeInvalidTaskFile:
		return "Fix the task file where the message says (see the README's Task files for its format)."
	case contract.ErrTypeAgentNotFound:
		return "Install the agent where the worker runs (Claude Code: npm install -g @anthropic-ai/claude-code), " +
			"or name another with --agent-command."
	case contract.ErrTypeInvalidAgentConfig:
		return "Set agent.command (--agent-command) to the agent's command line."
	case contract.ErrTypeGitHubNoToken:
		return "Export GITHUB_TOKEN (or the variable github.token-env names) in the worker's environment."
	}
	return ""
}

// isRootCause reports whether errors of type errType are the cause of a
// failure rather than a layer around it.
func isRootCause(errType string) bool {
	switch errType {
	case contract.ErrTypeInvalidTaskFile, contract.ErrTypeDirtyWorkspace,
		contract.ErrTypeInvalidWorkspace, contract.ErrTypeAgentNotFound,
		contract.ErrTypeAgentPermanent, contract.ErrTypeInvalidAgentConfig,
		contract.ErrTypeInvalidInput,
		contract.ErrTypeGitHubNoToken, contract.ErrTypeGitHubUnauthorized, contract.ErrTypeGitHubForbidden,
		contract.ErrTypeGitHubNotFound, contract.ErrTypeGitHubInvalid, contract.ErrTypeGitHubPreflight:
		return true
	}
	return false
}

// explain is what to print of a failure: its root cause, once, and how
// to fix it when that is known; with --verbose also the whole chain.
func (cctx *commandContext) explain(err error) string {
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
		if root.Type() == contract.ErrTypeInvalidTaskFile && strings.HasPrefix(msg, "no task file") {
			fix = "Write one: `starter init DIR` writes a commented ralph.yaml and an example prd.json (see the README's Task files)."
		}
		if fix != "" {
			msg += "\n" + fix
		}
	}
	if cctx.verbose && msg != err.Error() {
		msg += "\n\nThe whole error chain (--verbose):\n" + err.Error()
	}
	return strings.TrimSpace(msg)
}
