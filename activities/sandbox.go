package activities

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/egress"
	"github.com/durable-ralph/ralph/sandbox"
)

// contained is an agent command made ready to run: in a sandbox when
// Box is set, with the egress proxy its network goes out through.
type contained struct {
	cmd   sandbox.Command
	box   string
	proxy *egress.Proxy
	dir   string
}

// close stops the proxy and removes its socket; the destinations it
// refused are returned.
func (c *contained) close() []string {
	if c.cmd.Release != nil {
		c.cmd.Release()
	}
	var refused []string
	if c.proxy != nil {
		refused = c.proxy.Refused()
		_ = c.proxy.Close()
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
	return refused
}

// contain makes cmd, the agent of backend, run as the session's
// agent.sandbox says: bare when it is off, or when it is auto on a worker
// without a sandbox (the worker said so at its start); an error for
// required there.
func (a *Agent) contain(in contract.IterationInput, backend agent.Backend, cmd sandbox.Command) (*contained, error) {
	s := in.Agent.Sandbox
	if s.Mode == sandbox.ModeOff {
		return &contained{cmd: cmd}, nil
	}
	box, err := sandbox.Find()
	network := s.Network
	if network == "" {
		network = sandbox.NetInternet
	}
	if err == nil {
		err = box.ProxyProblem(network)
	}
	if err != nil {
		if s.Mode == sandbox.ModeRequired {
			return nil, temporal.NewNonRetryableApplicationError(sandbox.Unavailable(err).Error(), contract.ErrTypeSandboxUnavailable, err)
		}
		return &contained{cmd: cmd}, nil
	}
	spec := a.sandboxSpec(in, backend, cmd)
	spec.Network = network
	c := &contained{box: box.Name()}
	if sandbox.Proxied(network) {
		if err := c.listen(network, s.NetworkAllow, apiHosts(backend, cmd.Env), box.ServesProxy()); err != nil {
			return nil, err
		}
		if c.dir != "" {
			spec.ProxySocket = filepath.Join(c.dir, "egress.sock")
		} else {
			spec.ProxyServe = c.proxy.Serve
		}
	}
	if c.cmd, err = box.Wrap(spec, cmd); err != nil {
		c.close()
		return nil, temporal.NewNonRetryableApplicationError(sandbox.Unavailable(err).Error(), contract.ErrTypeSandboxUnavailable, err)
	}
	return c, nil
}

// listen starts the egress proxy of one run: served by the worker on the
// listener it opens in the sandbox's network (inNet: no socket, no
// bridge), or on a socket in a directory of its own that the sandbox
// binds.
func (c *contained) listen(network string, allow, api []string, inNet bool) error {
	policy := egress.Policy{Internet: network == sandbox.NetInternet, Allow: slices.Concat(api, allow)}
	if err := policy.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("agent.network-allow or the model API's base URL: %v", err), contract.ErrTypeInvalidAgentConfig, err)
	}
	var err error
	if inNet {
		if c.proxy, err = egress.New(policy); err != nil {
			return fmt.Errorf("egress proxy: %w", err)
		}
		return nil
	}
	if c.dir, err = os.MkdirTemp("", "ralph-egress-"); err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	if c.proxy, err = egress.Listen(filepath.Join(c.dir, "egress.sock"), policy); err != nil {
		c.close()
		return fmt.Errorf("egress proxy: %w", err)
	}
	return nil
}

// sandboxSpec is what the agent of backend may reach in in's workspace.
func (a *Agent) sandboxSpec(in contract.IterationInput, backend agent.Backend, cmd sandbox.Command) sandbox.Spec {
	getenv := lookupIn(cmd.Env)
	home := getenv("HOME")
	gd := gitDirs(in.Workspace)
	lim := in.Agent.Sandbox.Limits
	spec := sandbox.Spec{
		Limits:    sandbox.Limits{Processes: lim.Processes, Memory: lim.MemoryBytes, Tmp: lim.TmpBytes},
		Workspace: in.Workspace,
		GitDirs:   gd,
		Locked:    gitLocked(in.Workspace, gd),
		ReadOnly:  in.Agent.Sandbox.ReadOnly,
		ReadWrite: in.Agent.Sandbox.ReadWrite,
		Hidden:    append(sandbox.Credentials(home), a.Hidden...),
		Home:      home,
		Path:      getenv("PATH"),
		Binary:    cmd.Path,
	}
	if m := in.Task.MemoriesFile; m != "" && filepath.IsAbs(m) {
		// The learnings an issue queue shares between its issues live in
		// the clone, outside the work tree: the agent appends to
		// that one file, which must exist to be bound.
		if f, err := os.OpenFile(m, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Close()
			spec.ReadWrite = append(slices.Clone(spec.ReadWrite), m)
		}
	}
	if sb, ok := backend.(agent.Sandboxed); ok && home != "" {
		dirs, files := sb.State(home, getenv)
		for _, d := range dirs {
			// A directory made here outlives the run: the agent's
			// sessions in it are what a resumed run continues.
			_ = os.MkdirAll(d, 0o700)
		}
		spec.State = append(dirs, files...)
	}
	return spec
}

// apiHosts are the model API hosts of backend's CLI in env.
func apiHosts(backend agent.Backend, env []string) []string {
	if sb, ok := backend.(agent.Sandboxed); ok {
		return sb.APIHosts(lookupIn(env))
	}
	return nil
}

// lookupIn returns a getenv of env.
func lookupIn(env []string) func(string) string {
	return func(name string) string {
		v := ""
		for _, kv := range env {
			if n, val, ok := strings.Cut(kv, "="); ok && n == name {
				v = val
			}
		}
		return v
	}
}

// gitDirs are the git directories a work tree at ws needs besides ws: the
// repository's common directory for a linked work tree (its .git is a
// file), or the .git of a repository ws lies inside. Read from files, no
// git process.
func gitDirs(ws string) []string {
	dotgit := filepath.Join(ws, ".git")
	fi, err := os.Lstat(dotgit)
	if err == nil && fi.IsDir() {
		return nil
	}
	if err == nil {
		data, err := os.ReadFile(dotgit)
		if err != nil {
			return nil
		}
		gd, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
		if !ok {
			return nil
		}
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(ws, gd)
		}
		common := gd
		if c, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
			common = strings.TrimSpace(string(c))
			if !filepath.IsAbs(common) {
				common = filepath.Join(gd, common)
			}
		}
		return []string{filepath.Clean(common)}
	}
	for d := filepath.Dir(ws); d != filepath.Dir(d); d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, ".git")); err == nil && fi.IsDir() {
			return []string{filepath.Join(d, ".git")}
		}
	}
	return nil
}

// gitLocked are the files of the repository at ws (its git directory, or
// the common one gitDirs found) through which git runs commands: the
// config (core.hooksPath, core.fsmonitor, filter drivers, aliases) and the
// hooks. The worker's own git commands run outside the sandbox, so the
// agent may not change them; the hooks directory is made when missing so
// that none can be planted.
func gitLocked(ws string, dirs []string) []string {
	gitDir := filepath.Join(ws, ".git")
	if len(dirs) > 0 {
		gitDir = dirs[0]
	}
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return nil
	}
	hooks := filepath.Join(gitDir, "hooks")
	_ = os.MkdirAll(hooks, 0o755)
	return []string{filepath.Join(gitDir, "config"), hooks}
}
