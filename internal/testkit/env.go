// Package testkit holds what the tests of several packages share: an
// environment without the user's Ralph settings.
package testkit

import (
	"os"
	"slices"
	"strings"
)

// ralphPrefix starts the names of the variables that configure Ralph
// (package config).
const ralphPrefix = "RALPH_"

// testKnobs start the names of the RALPH_* variables that tune the tests
// themselves (make soak, make bench, recording histories), which no
// setting of package config is named like.
var testKnobs = []string{"RALPH_BENCH_", "RALPH_SOAK_", "RALPH_RECORD_HISTORIES"}

// ClearRalphEnv unsets every RALPH_* variable of this process but the
// tests' own knobs (testKnobs). A test package that reads the
// configuration, or starts processes that do, calls it in its TestMain: a
// user who runs the tests from a shell with RALPH_DEV_PORT (or any
// setting, or a bot's token) exported would otherwise test their own
// settings, not the defaults the tests expect.
func ClearRalphEnv() {
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, ralphPrefix) && !slices.ContainsFunc(testKnobs, func(k string) bool { return strings.HasPrefix(name, k) }) {
			os.Unsetenv(name)
		}
	}
}

// Environ is the environment of a process a test starts: this process's
// without any RALPH_* variable (a test's t.Setenv included), then extra,
// the settings the test gives it.
func Environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, ralphPrefix) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
