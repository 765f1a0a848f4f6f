package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/durable-ralph/ralph/internal/words"
)

// checkSectionEnv reports environment variables named after a section, such
// as RALPH_DEV or RALPH_NOTIFY_TELEGRAM. Viper would let one hide every key
// of its section (RALPH_DEV would hide RALPH_DEV_PORT and the defaults of
// dev.*), so they are errors rather than silently wrong settings.
func checkSectionEnv() error {
	var errs []error
	seen := make(map[string]bool)
	for i := range specs {
		s := &specs[i]
		parts := strings.Split(s.key, ".")
		for n := 1; n < len(parts); n++ {
			section := strings.Join(parts[:n], ".")
			if seen[section] {
				continue
			}
			seen[section] = true
			name := envPrefix + "_" + envReplacer.Replace(strings.ToUpper(section))
			if os.Getenv(name) != "" {
				errs = append(errs, fmt.Errorf("environment variable %s is set, but %s is a group of settings, not a setting: unset it and set %s_* variables such as %s instead",
					name, section, name, s.env()))
			}
		}
	}
	return errors.Join(errs...)
}

// setOutsideFiles reports whether s is set by a flag on the command line or
// by its environment variable, which take precedence over every file.
func setOutsideFiles(fs *pflag.FlagSet, s *spec) bool {
	if f := lookupFlag(fs, s.flag); f != nil && f.Changed {
		return true
	}
	return os.Getenv(s.env()) != "" // viper treats empty as unset
}

// checkTrusted reports the trusted keys set by the workspace's config file
// file, read into fv. They are errors rather than silently ignored: ignoring
// them would leave a user puzzled why dev.port in ralph.yaml has no effect,
// and would hide that a repository tried to choose where the server
// listens or what the worker exposes.
func checkTrusted(fv *viper.Viper, file string) error {
	var set []*spec
	for _, key := range fv.AllKeys() {
		if s, ok := specByKey[key]; ok && s.trusted && fv.Get(key) != nil {
			set = append(set, s)
		}
	}
	slices.SortFunc(set, func(a, b *spec) int { return a.index() - b.index() })

	userFile, err := userFilePath()
	if err != nil {
		userFile = filepath.Join("$XDG_CONFIG_HOME", stateDirName, userFileName)
	}
	var errs []error
	for _, s := range set {
		errs = append(errs, fmt.Errorf("key %s in %s is not allowed in a workspace's %s, which comes with the repository: "+
			"it decides where the Temporal server listens, where its state is or what the worker exposes; "+
			"set it with --%s, %s or in the user config file %s",
			s.key, file, fileName, s.flag, s.env(), userFile))
	}
	return errors.Join(errs...)
}

// userFilePath returns $XDG_CONFIG_HOME/durable-ralph/config.yaml, or
// ~/.config/durable-ralph/config.yaml if XDG_CONFIG_HOME is unset or,
// against the XDG Base Directory Specification, relative.
func userFilePath() (string, error) {
	if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, stateDirName, userFileName), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".config", stateDirName, userFileName), nil
}

// findUserFile returns the user config file, "" if there is none.
func findUserFile() (string, error) {
	name, err := userFilePath()
	if err != nil {
		// No home directory, so no user file: do not fail a worker
		// without $HOME.
		return "", nil
	}
	info, err := os.Stat(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("user config file %s: %w", name, err)
	case info.IsDir():
		return "", fmt.Errorf("user config file %s is a directory", name)
	}
	return name, nil
}

// findFile returns the config file to read, "" if none, and whether it is
// the workspace's ralph.yaml rather than a file the user named.
func findFile(fs *pflag.FlagSet, v *viper.Viper, workspace string) (string, bool, error) {
	var name, source string
	if f := lookupFlag(fs, configFlag); f != nil && f.Changed {
		name, source = f.Value.String(), "--"+configFlag
	} else if env := os.Getenv(configEnv); env != "" {
		name, source = env, configEnv
	}
	if name != "" {
		info, err := os.Stat(name)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return "", false, fmt.Errorf("config file %s (from %s) does not exist", name, source)
		case err != nil:
			return "", false, fmt.Errorf("config file %s (from %s): %w", name, source, err)
		case info.IsDir():
			return "", false, fmt.Errorf("config file %s (from %s) is a directory", name, source)
		}
		return absPath(name), false, nil
	}

	dir := workspace
	if dir == "" {
		// Flags, environment and the user file: ralph.yaml is not read yet.
		dir = v.GetString("workspace")
	}
	name = filepath.Join(dir, fileName)
	info, err := os.Stat(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("config file %s: %w", name, err)
	case info.IsDir():
		return "", false, fmt.Errorf("config file %s is a directory", name)
	}
	return absPath(name), true, nil
}

// absPath returns name made absolute, or name if that fails.
func absPath(name string) string {
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return name
}

// readFile reads the config file name into v, over any file read before,
// and returns the file's own viper. It reads the file with a viper of its
// own and merges only the values that are set, so that an emptied section
// ("dev:" with every line below commented out) is ignored instead of hiding
// the section's defaults.
func readFile(v *viper.Viper, name string) (*viper.Viper, error) {
	fv := viper.New()
	fv.SetConfigFile(name)
	switch strings.TrimPrefix(filepath.Ext(name), ".") {
	case "yaml", "yml", "json", "toml":
	default:
		fv.SetConfigType("yaml")
	}
	if err := fv.ReadInConfig(); err != nil {
		return nil, fmt.Errorf("read config file %s: %w", name, err)
	}
	if err := v.MergeConfigMap(fv.AllSettings()); err != nil {
		return nil, fmt.Errorf("read config file %s: %w", name, err)
	}
	return fv, nil
}

// checkKeys reports keys in the config file that are not settings: all keys
// of v except the known ones come from the file, since the file read before
// it, if any, has passed this check.
func checkKeys(v *viper.Viper, file string) error {
	var unknown []string
	for _, key := range v.AllKeys() {
		if _, ok := specByKey[key]; !ok {
			unknown = append(unknown, key)
		}
	}
	slices.Sort(unknown)

	var errs []error
	for _, key := range unknown {
		errs = append(errs, unknownKeyError(key, file))
	}
	return errors.Join(errs...)
}

// unknownKeyError explains why key, found in file, is not a setting.
func unknownKeyError(key, file string) error {
	var section []string // keys in the section called key
	for i := range specs {
		if strings.HasPrefix(specs[i].key, key+".") {
			section = append(section, specs[i].key)
		}
		if strings.HasPrefix(key, specs[i].key+".") {
			return fmt.Errorf("invalid key %s in %s: %s is a single value, not a group of settings", key, file, specs[i].key)
		}
	}
	if len(section) > 0 {
		return fmt.Errorf("invalid key %s in %s: it is a group of settings (%s), not a value", key, file, strings.Join(section, ", "))
	}
	if s := suggest(key); s != "" {
		return fmt.Errorf("unknown key %s in %s (did you mean %s?)", key, file, s)
	}
	return fmt.Errorf("unknown key %s in %s", key, file)
}

// suggest returns the known key closest to the unknown key, or "".
// A key with the same last element (max_iterations at the top level for
// limits.max-iterations) or within a few typos counts as close.
func suggest(key string) string {
	norm := strings.ReplaceAll(key, "_", "-")
	leaf := norm[strings.LastIndex(norm, ".")+1:]
	best, bestDist := "", 3 // at most 2 edits
	for i := range specs {
		k := specs[i].key
		if k[strings.LastIndex(k, ".")+1:] == leaf {
			return k
		}
		if d := words.Distance(norm, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}
