package flow

import (
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

// IsPermanent reports whether err is a failure that no retry can fix.
func IsPermanent(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		if appErr.NonRetryable() {
			return true
		}
		switch appErr.Type() {
		case contract.ErrTypeAgentNotFound, contract.ErrTypeAgentPermanent,
			contract.ErrTypeInvalidWorkspace, contract.ErrTypeInvalidTaskFile,
			contract.ErrTypeInvalidAgentConfig, contract.ErrTypeDirtyWorkspace:
			return true
		}
	}
	return false
}

// RootMessage is the message of the innermost application error in err, so
// a user reads "agent binary \"claude\" not found" instead of the chain of
// activity wrappers around it.
func RootMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Error()
	}
	return err.Error()
}

// IsGitHubPermanent reports whether err is a GitHub failure that no
// retry and no later poll can fix: no token, a token GitHub refuses,
// or a repository the preflight refused.
func IsGitHubPermanent(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case contract.ErrTypeGitHubNoToken, contract.ErrTypeGitHubUnauthorized, contract.ErrTypeGitHubPreflight:
			return true
		}
	}
	return false
}
