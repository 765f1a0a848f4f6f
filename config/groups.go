package config

import "strings"

// Group is a set of settings whose flags go together on a command.
type Group int

// Groups of settings.
const (
	// SessionFlags say what a session does: workspace, agent.*, task.*,
	// limits.*, git.*, checkpoint.* (not agent.env).
	SessionFlags Group = 1 << iota
	// QueueFlags configure an issue queue: github.* and queue.* (not
	// github.write-interval, github.token-file, github.app-* nor
	// github.webhook-*).
	QueueFlags
	// ConnectionFlags say where Temporal is and how to read what it
	// stores: task-queue, dev.*, codec.key-file and codec.key-env.
	ConnectionFlags
	// WorkerFlags are read only by a worker: agent.env,
	// github.write-interval, github.token-file, github.app-*,
	// github.webhook-*, codec.server and notify.*.
	WorkerFlags
	// GitHubFlags are read by both a queue and a worker: github.api-url
	// (the queue's API; the worker asks its GitHub App's tokens there)
	// and github.token-env (the queue's token; the worker redacts it).
	GitHubFlags

	// AllFlags is every group.
	AllFlags = SessionFlags | QueueFlags | ConnectionFlags | WorkerFlags | GitHubFlags
)

// group is the Group of s.
func (s *spec) group() Group {
	switch s.key {
	case "agent.env", "github.write-interval", "github.token-file", "codec.server", "worker.max-agents", "worker.metrics-addr":
		return WorkerFlags
	case "github.webhook-listen", "github.webhook-secret-env":
		return WorkerFlags
	case "github.app-id", "github.app-installation-id", "github.app-private-key-file":
		return WorkerFlags
	case "github.api-url", "github.token-env":
		return GitHubFlags
	case "worker.host-id":
		// Every command needs it: it is part of the IDs of the sessions
		// of this machine's workspaces.
		return ConnectionFlags
	case "worker.host-timeout":
		return SessionFlags
	case "workspace":
		return SessionFlags
	case "task-queue":
		return ConnectionFlags
	}
	switch section, _, _ := strings.Cut(s.key, "."); section {
	case "agent", "task", "limits", "git", "checkpoint", "roles":
		return SessionFlags
	case "github", "queue":
		return QueueFlags
	case "dev", "codec":
		return ConnectionFlags
	case "notify":
		return WorkerFlags
	}
	panic("config: no flag group for key " + s.key)
}

// Topics of the flags, in the order help shows them (FlagTopic).
const (
	TopicSession       = "Session"
	TopicAgent         = "Agent"
	TopicRoles         = "Roles"
	TopicLimits        = "Limits"
	TopicGit           = "Git"
	TopicCheckpoints   = "Checkpoints"
	TopicSandbox       = "Sandbox"
	TopicQueue         = "Issue queue"
	TopicConnection    = "Connection"
	TopicWorker        = "Worker"
	TopicNotifications = "Notifications"
)

// Topics are the topics of the flags, in the order help shows them.
func Topics() []string {
	return []string{TopicSession, TopicAgent, TopicRoles, TopicLimits, TopicGit, TopicCheckpoints, TopicSandbox,
		TopicQueue, TopicConnection, TopicWorker, TopicNotifications}
}

// TopicAnnotation is the annotation of each flag AddFlagGroups adds that
// names its topic (Topics), for help to show the flags by topic.
const TopicAnnotation = "ralph_topic"

// topic is the Topic of s.
func (s *spec) topic() string {
	switch s.key {
	case "agent.sandbox", "agent.network", "agent.network-allow", "agent.sandbox-ro", "agent.sandbox-rw":
		return TopicSandbox
	}
	if strings.HasPrefix(s.key, "agent.limits.") {
		return TopicSandbox // what a contained run may use
	}
	switch s.key {
	case "workspace", "worker.host-timeout":
		return TopicSession
	case "worker.host-id", "task-queue", "codec.key-file", "codec.key-env":
		return TopicConnection
	}
	switch g := s.group(); {
	case g == WorkerFlags && strings.HasPrefix(s.key, "notify."):
		return TopicNotifications
	case g == WorkerFlags:
		return TopicWorker
	case g == QueueFlags || g == GitHubFlags:
		return TopicQueue
	case g == ConnectionFlags:
		return TopicConnection
	}
	switch section, _, _ := strings.Cut(s.key, "."); section {
	case "agent":
		return TopicAgent
	case "roles":
		return TopicRoles
	case "limits":
		return TopicLimits
	case "git":
		return TopicGit
	case "checkpoint":
		return TopicCheckpoints
	}
	return TopicSession
}
