package flow

import (
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
)

// NoChecksGrace is how long a pushed head without any check may still
// get some (GitHub creates check runs a moment after the push): after
// it, a repository without CI counts as green.
const NoChecksGrace = time.Minute

// githubTimeout bounds one attempt of a GitHub activity: a few requests,
// spaced. A worker that dies mid-request is noticed that much later.
const githubTimeout = 30 * time.Second

// GitHubOptions are the options of a GitHub activity described by
// summary.
func GitHubOptions(ctx workflow.Context, summary string) workflow.Context {
	timeout := githubTimeout
	if strings.HasPrefix(summary, "look for") {
		// Listing reads the events and permissions of every candidate.
		timeout = 5 * time.Minute
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    2 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Minute,
			MaximumAttempts:    10,
			NonRetryableErrorTypes: []string{
				contract.ErrTypeGitHubNoToken, contract.ErrTypeGitHubUnauthorized, contract.ErrTypeGitHubForbidden,
				contract.ErrTypeGitHubNotFound, contract.ErrTypeGitHubInvalid, contract.ErrTypeGitHubPreflight,
			},
		},
	})
}

// GitOptions are the options of the git activities on its clone.
// They heartbeat while they run: a worker that dies in one is noticed
// after the heartbeat timeout, not the start-to-close timeout.
func GitOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    2 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    5,
			NonRetryableErrorTypes: []string{
				contract.ErrTypeInvalidWorkspace, contract.ErrTypePushRejected,
			},
		},
	}
}
