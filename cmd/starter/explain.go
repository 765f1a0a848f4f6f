package main

import (
	"errors"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

// verbose is the --verbose flag: failures are printed with their whole
// chain of activity and workflow errors.
var verbose bool

// fixes say how to put right the causes a user can fix, by error type,
// when the message does not say it already.
var fixes = map[string]string{
	contract.ErrTypeInvalidTaskFile: "Fix the task file where the message says (see the README's Task files for its format).",
	contract.ErrTypeAgentNotFound: "Install the agent where the worker runs (Claude Code: npm install -g @anthropic-ai/claude-code), " +
		"or name another with --agent-command.",
	contract.ErrTypeInvalidAgentConfig: "Set agent.command (--agent-command) to the agent's command line.",
	contract.ErrTypeGitHubNoToken:      "Export GITHUB_TOKEN (or the variable github.token-env names) in the worker's environment.",
}

// rootCauses are the error types that are the cause of a failure rather
// than a layer around it.
var rootCauses = map[string]bool{
	contract.ErrTypeInvalidTaskFile: true, contract.ErrTypeDirtyWorkspace: true,
	contract.ErrTypeInvalidWorkspace: true, contract.ErrTypeAgentNotFound: true,
	contract.ErrTypeAgentPermanent: true, contract.ErrTypeInvalidAgentConfig: true,
	contract.ErrTypeInvalidInput:  true,
	contract.ErrTypeGitHubNoToken: true, contract.ErrTypeGitHubUnauthorized: true, contract.ErrTypeGitHubForbidden: true,
	contract.ErrTypeGitHubNotFound: true, contract.ErrTypeGitHubInvalid: true, contract.ErrTypeGitHubPreflight: true,
}

// explain is what to print of a failure: its root cause, once, and how
// to fix it when that is known; with --verbose also the whole chain.
func explain(err error) string {
	var outer, root *temporal.ApplicationError
	for e := err; e != nil; e = errors.Unwrap(e) {
		if ae, ok := e.(*temporal.ApplicationError); ok {
			if outer == nil {
				outer = ae
			}
			if root == nil && rootCauses[ae.Type()] {
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
		fix := fixes[root.Type()]
		if root.Type() == contract.ErrTypeInvalidTaskFile && strings.HasPrefix(msg, "no task file") {
			fix = "Write one: `starter init DIR` writes a commented ralph.yaml and an example prd.json (see the README's Task files)."
		}
		if fix != "" {
			msg += "\n" + fix
		}
	}
	if verbose && msg != err.Error() {
		msg += "\n\nThe whole error chain (--verbose):\n" + err.Error()
	}
	return strings.TrimSpace(msg)
}
