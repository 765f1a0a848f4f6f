package config

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Load resolves Config with precedence flags (only those the user changed)
// > RALPH_* environment variables > config file > user config file >
// defaults, and validates it.
//
// The config file is the one named by the --config flag or else RALPH_CONFIG;
// it must exist. Otherwise it is <workspace>/ralph.yaml if that exists, where
// workspace is the directory the session runs in: the workspace argument, or
// else the workspace key from flags, environment or the user config file, or
// else the current directory. A non-empty workspace argument (such as a
// positional argument of the command) also overrides the workspace key.
//
// The user config file is $XDG_CONFIG_HOME/durable-ralph/config.yaml, or
// ~/.config/durable-ralph/config.yaml if XDG_CONFIG_HOME is unset or
// relative; it need not exist. The workspace's ralph.yaml comes with the
// repository, so it may not set trusted keys (where the Temporal server
// listens, where its state is, what the worker exposes): that is an error.
// A file named by --config or RALPH_CONFIG, chosen by the user, may.
// Load does not refuse a workspace's ralph.yaml that sets commands
// (agent.command, task.check-command, …): the commands that would run
// them ask [Config.CheckWorkspaceTrusted] first.
//
// fs may be nil, or lack flags, when there are no flags to honour.
// Errors name the offending key with its flag and environment variable.
func Load(fs *pflag.FlagSet, workspace string) (Config, error) {
	if err := checkSectionEnv(); err != nil {
		return Config{}, err
	}
	v, err := newViper(fs)
	if err != nil {
		return Config{}, err
	}
	files, err := readFiles(fs, v, workspace)
	if err != nil {
		return Config{}, err
	}
	var cfg Config
	if err := v.Unmarshal(&cfg, viper.DecodeHook(decodeHook)); err != nil {
		return Config{}, decodeError(v, err)
	}
	files.record(&cfg)
	if workspace != "" {
		cfg.Workspace = workspace
	}
	cfg.normalize()
	if err := cfg.resolve(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// newViper returns a viper that holds the defaults of every setting, reads
// the RALPH_* environment variables and is bound to the flags of fs.
func newViper(fs *pflag.FlagSet) (*viper.Viper, error) {
	v := viper.New()
	v.SetEnvPrefix(envPrefix)
	v.SetEnvKeyReplacer(envReplacer)
	v.AutomaticEnv()
	for i := range specs {
		s := &specs[i]
		v.SetDefault(s.key, s.def)
		if f := lookupFlag(fs, s.flag); f != nil {
			if err := v.BindPFlag(s.key, f); err != nil {
				return nil, fmt.Errorf("bind flag --%s to %s: %w", s.flag, s.key, err)
			}
		}
	}
	return v, nil
}

// loadedFiles are the config files Load read, and the commands the
// workspace's ralph.yaml chose, for Notices.
type loadedFiles struct {
	file, userFile   string
	agentCommandFile string
	roleCommandKeys  []string
	runs             *workspaceRuns
}

// readFiles reads the user config file and then the config file into v.
func readFiles(fs *pflag.FlagSet, v *viper.Viper, workspace string) (loadedFiles, error) {
	// The user file comes first: it has the lowest precedence of the files,
	// and its workspace key may say where to look for ralph.yaml.
	var files loadedFiles
	userFile, err := findUserFile()
	if err != nil {
		return files, err
	}
	if userFile != "" {
		if _, err := readFile(v, userFile); err != nil {
			return files, err
		}
		if err := checkKeys(v, userFile); err != nil {
			return files, err
		}
	}
	files.userFile = userFile

	file, inWorkspace, err := findFile(fs, v, workspace)
	if err != nil || file == "" {
		return files, err
	}
	files.file = file
	fv, err := readFile(v, file)
	if err != nil {
		return files, err
	}
	if err := checkKeys(v, file); err != nil {
		return files, err
	}
	if inWorkspace {
		return files, files.checkWorkspaceFile(fs, fv)
	}
	return files, nil
}

// checkWorkspaceFile checks the workspace's ralph.yaml, read into fv, for
// trusted keys and notes the commands it chooses and what it sets that
// runs (CheckWorkspaceTrusted).
func (l *loadedFiles) checkWorkspaceFile(fs *pflag.FlagSet, fv *viper.Viper) error {
	if err := checkTrusted(fv, l.file); err != nil {
		return err
	}
	if fv.IsSet("agent.command") && !setOutsideFiles(fs, lookupSpec("agent.command")) {
		l.agentCommandFile = l.file
	}
	for _, key := range []string{"roles.reviewer.command", "roles.planner.command"} {
		if fv.IsSet(key) && !setOutsideFiles(fs, lookupSpec(key)) {
			l.roleCommandKeys = append(l.roleCommandKeys, key)
		}
	}
	l.noteRuns(fs, fv)
	return nil
}

// record notes in cfg the files that were read.
func (l loadedFiles) record(cfg *Config) {
	cfg.File = l.file
	cfg.UserFile = l.userFile
	cfg.agentCommandFile = l.agentCommandFile
	cfg.runs = l.runs
	if len(l.roleCommandKeys) > 0 {
		cfg.roleCommandKeys, cfg.roleCommandFile = l.roleCommandKeys, l.file
	}
}

// normalize puts the settings that are names in the form validate and
// the rest of Ralph expect: lower case without surrounding space, and the
// GitHub API URL ending in "/".
func (c *Config) normalize() {
	c.Task.Mode = strings.ToLower(strings.TrimSpace(c.Task.Mode))
	c.Agent.Backend = strings.ToLower(strings.TrimSpace(c.Agent.Backend))
	for i, b := range c.Agent.Fallback {
		c.Agent.Fallback[i] = strings.ToLower(strings.TrimSpace(b))
	}
	c.Roles.Reviewer.Backend = strings.ToLower(strings.TrimSpace(c.Roles.Reviewer.Backend))
	c.Roles.Planner.Backend = strings.ToLower(strings.TrimSpace(c.Roles.Planner.Backend))
	c.Checkpoint.OnTimeout = strings.ToLower(strings.TrimSpace(c.Checkpoint.OnTimeout))
	c.Agent.Sandbox = strings.ToLower(strings.TrimSpace(c.Agent.Sandbox))
	c.Agent.Network = strings.ToLower(strings.TrimSpace(c.Agent.Network))
	c.Git.ProtectedPaths = patterns(c.Git.ProtectedPaths)
	events := make([]string, len(c.Notify.Events)) // not the default's array
	for i, e := range c.Notify.Events {
		events[i] = strings.ToLower(strings.TrimSpace(e))
	}
	c.Notify.Events = events
	for _, paths := range [][]string{c.Agent.SandboxRO, c.Agent.SandboxRW} {
		for i, p := range paths {
			if e, err := expandHome(p); err == nil {
				paths[i] = e
			}
		}
	}
	if u, reason := normalizeAPIURL(c.GitHub.APIURL); reason == "" {
		c.GitHub.APIURL = u
	}
}

// resolve makes the paths and names of c whole, validates c, and resolves
// the agent's command.
func (c *Config) resolve() error {
	for _, step := range []func() error{c.resolveStateDir, c.resolveKeyFile, c.resolveHostID, c.validate, c.resolveAgentCommand} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}
