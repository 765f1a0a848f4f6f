// Package sandbox contains an agent run: the process sees its workspace,
// its toolchains and its backend's own state, a private /tmp and an
// otherwise empty home, its own process tree, and a network whose only
// way out is the worker's egress proxy (or none, or the host's).
//
// A Box turns a command line into one that runs contained. Bubblewrap
// (bwrap, the tool behind Flatpak and Claude Code's Linux sandbox) is the
// Box on Linux; other systems have none yet, and a Box for sandbox-exec
// or Landlock would implement the same interface.
package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
)

// Modes of agent.sandbox.
const (
	// ModeAuto contains agent runs when a Box is available and runs
	// them bare otherwise, after the worker said so once.
	ModeAuto = "auto"
	// ModeRequired fails a run that cannot be contained.
	ModeRequired = "required"
	// ModeOff runs agents bare.
	ModeOff = "off"
)

// Networks of agent.network.
const (
	// NetInternet is a network namespace whose only way out is the
	// egress proxy, which lets through public hosts and the allow list.
	NetInternet = "internet"
	// NetAllowList is a network namespace whose only way out is the
	// egress proxy, which lets through the allow list alone.
	NetAllowList = "allow-list"
	// NetNone is a network namespace with nothing but its own loopback.
	NetNone = "none"
	// NetOpen is the host's network.
	NetOpen = "open"
)

// Modes are the values of agent.sandbox; Networks those of agent.network.
var (
	Modes    = []string{ModeAuto, ModeRequired, ModeOff}
	Networks = []string{NetInternet, NetOpen, NetAllowList, NetNone}
)

// ProxyPort is the port on the sandbox's own loopback where the egress
// proxy is reached.
const ProxyPort = 3128

// Spec is what one contained run may reach.
type Spec struct {
	// Workspace is the run's working directory, read-write.
	Workspace string
	// GitDirs are directories a work tree needs besides itself (the
	// repository's common git directory), read-write.
	GitDirs []string
	// State are the backend's own configuration and state (~/.claude,
	// ~/.codex, …), read-write; ones that do not exist are left out.
	State []string
	// ReadOnly and ReadWrite are paths the user added (agent.sandbox-ro
	// and agent.sandbox-rw).
	ReadOnly, ReadWrite []string
	// Locked are read-only inside although a path above is read-write:
	// the git configuration and hooks, which the worker's own git
	// commands would otherwise run outside the sandbox.
	Locked []string
	// Hidden never exist inside, even where a path above includes them:
	// the worker's state directory, the user configuration, credentials.
	Hidden []string
	// Home is the home directory: empty inside but for what is bound.
	Home string
	// Path is the run's PATH: its directories are toolchains, bound
	// read-only.
	Path string
	// Binary is the program run, bound read-only when no other path
	// brings it.
	Binary string
	// Network is one of Networks. The egress proxy of NetInternet and
	// NetAllowList is ProxyServe where the worker enters the sandbox's
	// network itself (Bubblewrap.ServesProxy): it is handed the listener
	// the worker opens there (127.0.0.1:ProxyPort) to serve the proxy
	// on, and the sandbox closes that listener once the run ended.
	// Elsewhere it is ProxySocket, a Unix socket the sandbox binds and
	// socat bridges inside.
	Network     string
	ProxySocket string
	ProxyServe  func(net.Listener)
	// Limits bound what the run may use (agent.limits).
	Limits Limits
}

// Command is a command line to run: Path with Args, in Env.
type Command struct {
	Path string
	Args []string
	Env  []string
	// Guarded: the command ends everything it starts, when it ends and
	// when its parent dies (bwrap's --die-with-parent with a PID
	// namespace of its own), so the runner needs no guard of its own.
	Guarded bool
	// Files are inherited by the command as its fds 3, 4, …; the runner
	// closes its copies once the command has started.
	Files []*os.File
	// Ready, when set, must be called with the command's PID as soon as
	// it started: it finishes the sandbox (the run's control group, its
	// network's listener) and lets the command run. Its error wraps
	// ErrStart; the command was killed before it ran anything.
	Ready func(pid int) error
	// Spawn, when set, must start the command in the runner's place: it
	// starts it where the run's processes must be born (the run's
	// control group).
	Spawn func(cmd *exec.Cmd) error
	// Release, when set, is run once the command has ended.
	Release func()
}

// Start starts cmd, made of c's Path, Args and Env, as c must be
// started: with c's Files, which it then closes, through Spawn, and
// Ready. The caller waits for cmd (also after an error of Ready), then
// runs Release.
func (c Command) Start(cmd *exec.Cmd) error {
	cmd.ExtraFiles = c.Files
	var err error
	if c.Spawn != nil {
		err = c.Spawn(cmd)
	} else {
		err = cmd.Start()
	}
	for _, f := range c.Files {
		f.Close()
	}
	if err != nil || c.Ready == nil {
		return err
	}
	return c.Ready(cmd.Process.Pid)
}

// Box runs commands contained.
type Box interface {
	// Name names the Box for messages ("bubblewrap 0.8.0").
	Name() string
	// Wrap returns the command that runs cmd contained as spec says.
	Wrap(spec Spec, cmd Command) (Command, error)
}

// ErrUnavailable is what Find returns on a machine without a Box.
var ErrUnavailable = errors.New("no sandbox available")

// ValidMode reports whether mode is one of Modes ("" is auto).
func ValidMode(mode string) bool { return mode == "" || slices.Contains(Modes, mode) }

// ValidNetwork reports whether network is one of Networks ("" is
// internet).
func ValidNetwork(network string) bool { return network == "" || slices.Contains(Networks, network) }

// Proxied reports whether a run on network goes out through the egress
// proxy.
func Proxied(network string) bool {
	return network == "" || network == NetInternet || network == NetAllowList
}

// Unavailable is the error of a run that must be contained on a machine
// that cannot: why, and what to do.
func Unavailable(why error) error {
	return fmt.Errorf("agent runs cannot be contained: %w; %s", why, InstallHint)
}
