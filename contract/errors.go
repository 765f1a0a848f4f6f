package contract

// ReasonFailed is an issue outcome: a step of the queue failed (the
// session itself ends with the usual reasons).
const ReasonFailed Reason = "failed"

// ErrTypeSessionEnded is the error type of AwaitSession when the awaited
// session failed, was terminated or no longer exists: not retryable.
const ErrTypeSessionEnded = "SessionEnded"

// ErrTypeQueueFailed is the error type of a queue that cannot go on (its
// token is missing or lacks a permission).
const ErrTypeQueueFailed = "QueueFailed"

// ErrTypeInvalidInput is the error type of a session started with input
// that can never run.
const ErrTypeInvalidInput = "InvalidSessionInput"

// ErrTypeIterationFailed is the error type of a session that ended because
// an iteration failed in a way no retry can fix (a missing agent binary, a
// workspace that is gone).
const ErrTypeIterationFailed = "IterationFailed"

// Error types of non-retryable activity failures. The workflow and the
// starter match on them, so they are part of the contract.
const (
	ErrTypeAgentNotFound      = "AgentNotFound"
	ErrTypeAgentPermanent     = "AgentPermanentError"
	ErrTypeInvalidWorkspace   = "InvalidWorkspace"
	ErrTypeDirtyWorkspace     = "DirtyWorkspace"
	ErrTypeInvalidTaskFile    = "InvalidTaskFile"
	ErrTypeInvalidAgentConfig = "InvalidAgentConfig"
	// ErrTypeAgentUnusable: the agent's binary is there but does not
	// answer --version (it fails, or hangs).
	ErrTypeAgentUnusable = "AgentUnusable"
	// ErrTypeAgentSlotBusy: every agent slot of the worker stayed taken
	// for as long as one attempt may wait. Not a failure: the session
	// runs the same iteration again (its details carry the Progress to
	// go on from).
	ErrTypeAgentSlotBusy = "AgentSlotBusy"
	// ErrTypeSandboxUnavailable: agent.sandbox is required and the
	// worker cannot contain the agent (no bubblewrap, no socat, or no
	// user namespaces).
	ErrTypeSandboxUnavailable = "SandboxUnavailable"
	// ErrTypeWorkerRestarted: the worker running the attempt died; a
	// worker that started again on its host failed the attempt so that
	// its retry runs at once (retryable).
	ErrTypeWorkerRestarted = "WorkerRestarted"
)

// ErrTypePushRejected is the error type of a push that origin refused
// (the branch moved there).
const ErrTypePushRejected = "PushRejected"

// ErrTypeSecretInPush is the error type of a push that Ralph refused
// because a line it would publish holds a secret: not retryable. Its
// details are the []SecretFinding, which never carry the secret.
const ErrTypeSecretInPush = "SecretInPush"

// ErrTypeRevertConflict is a merged change that no longer reverts
// cleanly onto its base (later commits changed the same lines): a person
// reverts it.
const ErrTypeRevertConflict = "RevertConflict"

// ErrTypeUnsafeRepository: the workspace's git directory is not the
// one the worker pinned when the session started (an agent replaced or
// redirected it): the worker runs no git there, and the session ends.
const ErrTypeUnsafeRepository = "UnsafeRepository"

// SecretFinding is a secret found in what a push would publish: what it
// is ("the value of GITHUB_TOKEN", "an AWS access key ID") and where.
type SecretFinding struct {
	What string `json:"what"`
	// File and Line are where the commit added it.
	File   string `json:"file"`
	Line   int    `json:"line"`
	Commit string `json:"commit"`
}

// Error types of GitHub failures that no retry can fix, and of rate limits.
const (
	ErrTypeGitHubNoToken      = "GitHubTokenMissing"
	ErrTypeGitHubUnauthorized = "GitHubUnauthorized"
	ErrTypeGitHubForbidden    = "GitHubForbidden"
	ErrTypeGitHubNotFound     = "GitHubNotFound"
	ErrTypeGitHubInvalid      = "GitHubInvalidRequest"
	ErrTypeGitHubRateLimited  = "GitHubRateLimited"
	ErrTypeGitHubPreflight    = "GitHubPreflightFailed"
)
