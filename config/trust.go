package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// runKeys are the keys of a workspace's ralph.yaml whose values run on
// this machine, in the order they are shown: the command lines of the
// agent and of the roles, the check command, and the agent's extra
// arguments. The arguments count because they reach the agent's CLI,
// where some start programs (claude --mcp-config or --settings with hooks,
// codex -c mcp_servers.…) or lift its guards (--dangerously-skip-permissions,
// --yolo), and Ralph cannot tell those from harmless ones for every CLI.
// A workspace's ralph.yaml may set them only for a workspace the user
// trusted with those very values (TrustWorkspace). Every kindCommand key
// must be here; TestRunKeys checks it.
var runKeys = []string{"agent.command", "agent.args", "task.check-command", "roles.reviewer.command", "roles.planner.command"}

// RunSetting is a value, set by a workspace's ralph.yaml, that runs on
// this machine.
type RunSetting struct {
	// Key is the setting, such as agent.command.
	Key string `json:"key"`
	// Value is its value as a command line, words quoted where they need
	// it; task.check-command is the shell command as written.
	Value string `json:"value"`
}

// workspaceRuns is what the workspace's ralph.yaml sets that runs on this
// machine, for CheckWorkspaceTrusted.
type workspaceRuns struct {
	// file is the ralph.yaml, dir its directory, absolute and with
	// symbolic links resolved: the trust file's key.
	file, dir string
	settings  []RunSetting
	// sum is the SHA-256 of the settings' canonical form (hex): the keys
	// and their values, not the file, so that a comment or another key
	// may change without asking again.
	sum string
}

// readRuns returns the values of runKeys that fv, the own viper of the
// workspace's ralph.yaml file, sets to something other than empty; nil if
// it sets none.
func readRuns(fv *viper.Viper, file string) *workspaceRuns {
	runs := &workspaceRuns{file: file, dir: realDir(filepath.Dir(file))}
	h := sha256.New()
	for _, key := range runKeys {
		canonical, shown, ok := runValue(fv.Get(key), lookupSpec(key).kind)
		if !ok {
			continue
		}
		runs.settings = append(runs.settings, RunSetting{Key: key, Value: shown})
		fmt.Fprintf(h, "%s=%s\n", key, canonical)
	}
	if len(runs.settings) == 0 {
		return nil
	}
	runs.sum = hex.EncodeToString(h.Sum(nil))
	return runs
}

// runValue returns v, a value of a key of kind k as the file holds it, in
// canonical form (JSON of its words, or of the shell command) and as
// shown to the user; false if it is unset or empty, and so runs nothing.
func runValue(v any, k kind) (canonical, shown string, ok bool) {
	if v == nil {
		return "", "", false
	}
	var value any
	if k == kindString {
		s := strings.TrimSpace(fmt.Sprint(v))
		value, shown = s, s
		ok = s != ""
	} else {
		words := toWords(v)
		value, shown = words, joinWords(words)
		ok = len(words) > 0
	}
	data, err := json.Marshal(value)
	if err != nil { // strings and lists of strings always marshal
		panic(fmt.Sprintf("config: marshal %v: %v", value, err))
	}
	return string(data), shown, ok
}

// toWords returns a command line or a list of arguments, as the file
// holds it, as words, the way Load decodes it. A string that does not
// split (an unterminated quote, which Load reports) is one word.
func toWords(v any) []string {
	switch v := v.(type) {
	case string:
		if words, err := splitCommandLine(v); err == nil {
			return words
		}
		return []string{v}
	case []any:
		words := make([]string, 0, len(v))
		for _, w := range v {
			words = append(words, fmt.Sprint(w))
		}
		return words
	case []string:
		return v
	}
	return []string{fmt.Sprint(v)}
}

// joinWords spells words as a command line, quoting the words that need
// it, so that splitCommandLine gives them back.
func joinWords(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = quoteWord(w)
	}
	return strings.Join(quoted, " ")
}

// quoteWord quotes w in single quotes when it is empty or holds anything
// but letters, digits and the punctuation of paths and flags.
func quoteWord(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=,:@~%", r))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// realDir returns dir absolute and with its symbolic links resolved, or
// as absolute as it gets when that fails (a directory that is gone).
func realDir(dir string) string {
	abs := absPath(dir)
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// noteRuns notes in l what the workspace's ralph.yaml, read into fv, sets
// that runs, when a flag or environment variable does not override all of
// it: the session would run it, so the workspace must be trusted.
func (l *loadedFiles) noteRuns(fs *pflag.FlagSet, fv *viper.Viper) {
	runs := readRuns(fv, l.file)
	if runs != nil && slices.ContainsFunc(runs.settings, func(s RunSetting) bool {
		return !setOutsideFiles(fs, lookupSpec(s.Key))
	}) {
		l.runs = runs
	}
}

// CheckWorkspaceTrusted returns an *UntrustedError when the workspace's
// ralph.yaml sets a value that runs on this machine (agent.command,
// agent.args, task.check-command, roles.*.command) that no flag or
// environment variable overrides, and the user has not trusted the
// workspace with these values (starter trust DIR, TrustWorkspace). A file
// named by --config or RALPH_CONFIG is the user's own and needs no trust.
// The commands that start agents call it before they start anything;
// the others (status, prompt, …) run nothing of the file and do not.
func (c Config) CheckWorkspaceTrusted() error {
	if c.runs == nil {
		return nil
	}
	entries, err := TrustedWorkspaces()
	if err != nil {
		return err
	}
	var prior *TrustedWorkspace
	if i := slices.IndexFunc(entries, func(e TrustedWorkspace) bool { return e.Dir == c.runs.dir }); i >= 0 {
		prior = &entries[i]
	}
	if prior != nil && prior.SHA256 == c.runs.sum {
		return nil
	}
	return &UntrustedError{File: c.runs.file, Dir: c.runs.dir, Settings: c.runs.settings, Prior: prior}
}

// UntrustedError is a workspace's ralph.yaml that sets values that run on
// this machine, in a workspace the user has not trusted with them.
type UntrustedError struct {
	// File is the ralph.yaml, Dir the workspace, absolute and with
	// symbolic links resolved.
	File, Dir string
	// Settings are the values that run.
	Settings []RunSetting
	// Prior is the workspace's trust entry, with other values; nil if
	// the user never trusted the workspace.
	Prior *TrustedWorkspace
}

func (e *UntrustedError) Error() string {
	var b strings.Builder
	if e.Prior == nil {
		fmt.Fprintf(&b, "%s sets commands that run on this machine, and you have not trusted this workspace:\n", e.File)
	} else {
		fmt.Fprintf(&b, "%s sets commands that run on this machine, and they changed since you trusted this workspace on %s:\n",
			e.File, e.Prior.TrustedAt.Local().Format(time.DateOnly))
	}
	writeChanges(&b, e.Settings, e.Prior)
	fmt.Fprintf(&b, "A workspace's %s comes with the repository, which may not be yours. Read the commands above; if you trust them, run\n"+
		"    starter trust %s\n"+
		"and start again (or override them with their flags, such as --agent-command).", fileName, quoteWord(e.Dir))
	return b.String()
}

// writeChanges writes settings to b, a line each, with what each was in
// prior where it differs, and the keys prior had that are gone.
func writeChanges(b *strings.Builder, settings []RunSetting, prior *TrustedWorkspace) {
	was := map[string]string{}
	if prior != nil {
		for _, s := range prior.Settings {
			was[s.Key] = s.Value
		}
	}
	width := 0
	for _, s := range slices.Concat(settings, priorSettings(prior)) {
		width = max(width, len(s.Key))
	}
	for _, s := range settings {
		fmt.Fprintf(b, "    %-*s  %s", width, s.Key, s.Value)
		old, had := was[s.Key]
		switch {
		case prior != nil && !had:
			b.WriteString("    (new)")
		case had && old != s.Value:
			fmt.Fprintf(b, "    (was: %s)", old)
		}
		b.WriteString("\n")
	}
	for _, s := range priorSettings(prior) {
		if !slices.ContainsFunc(settings, func(n RunSetting) bool { return n.Key == s.Key }) {
			fmt.Fprintf(b, "    %-*s  (no longer set; was: %s)\n", width, s.Key, s.Value)
		}
	}
}

// priorSettings are the settings of prior, none if it is nil.
func priorSettings(prior *TrustedWorkspace) []RunSetting {
	if prior == nil {
		return nil
	}
	return prior.Settings
}
