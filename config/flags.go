package config

import (
	"fmt"
	"sort"
	"time"

	"github.com/spf13/pflag"
)

// AddFlags registers every configuration flag on fs, with its default, and
// the --config flag. The starter and worker call it on their cobra
// commands' flag sets. Like any pflag registration, it panics if fs already
// has a flag of the same name.
func AddFlags(fs *pflag.FlagSet) {
	AddFlagGroups(fs, AllFlags)
}

// ChangedFlags lists the flags of the settings in groups that were set on
// the command line of fs, by name, sorted.
func ChangedFlags(fs *pflag.FlagSet, groups Group) []string {
	var names []string
	for i := range specs {
		s := &specs[i]
		if f := fs.Lookup(s.flag); f != nil && f.Changed && s.group()&groups != 0 {
			names = append(names, "--"+s.flag)
		}
	}
	sort.Strings(names)
	return names
}

// AddFlagGroups registers the --config flag and the flags of the settings
// in groups on fs: each command shows and accepts only its own. Settings
// without a flag here still come from RALPH_* variables and config files.
func AddFlagGroups(fs *pflag.FlagSet, groups Group) {
	fs.String(configFlag, "", fmt.Sprintf("config file (default: <workspace>/%s if it exists) ($%s)", fileName, configEnv))
	for i := range specs {
		s := &specs[i]
		if s.group()&groups == 0 {
			continue
		}
		usage := fmt.Sprintf("%s ($%s)", s.usage, s.env())
		switch s.kind {
		case kindString, kindCommand:
			fs.String(s.flag, s.def.(string), usage)
		case kindInt:
			fs.Int(s.flag, s.def.(int), usage)
		case kindFloat:
			fs.Float64(s.flag, s.def.(float64), usage)
		case kindBool:
			fs.Bool(s.flag, s.def.(bool), usage)
		case kindDuration:
			fs.Duration(s.flag, s.def.(time.Duration), usage)
		case kindArgs:
			fs.StringArray(s.flag, s.def.([]string), usage)
		case kindInt64s:
			// Numbers as strings, read like the variable's and the
			// file's (toInt64s).
			fs.StringArray(s.flag, nil, usage)
		default:
			panic(fmt.Sprintf("config: key %s has unknown kind %d", s.key, s.kind))
		}
		if err := fs.SetAnnotation(s.flag, TopicAnnotation, []string{s.topic()}); err != nil {
			panic(fmt.Sprintf("config: annotate --%s: %v", s.flag, err))
		}
	}
}

// lookupFlag returns the flag called name in fs, or nil.
func lookupFlag(fs *pflag.FlagSet, name string) *pflag.Flag {
	if fs == nil {
		return nil
	}
	return fs.Lookup(name)
}
