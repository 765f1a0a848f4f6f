// Package selfguard protects the process that holds Ralph's secrets (the
// worker: the GitHub token, the codec key, the agents' API keys) from
// other processes of the same user, such as an agent that got out of its
// sandbox: on Linux, Protect makes the process non-dumpable, so that
// /proc/<pid>/environ, /proc/<pid>/mem and the like are root's and
// ptrace cannot attach. The programs the process starts are not
// affected: execve makes a process dumpable again.
package selfguard
