// Package realcli finds the real agent CLIs that `make agents` installs
// into .cache/, for the tests that run them, and runs them.
package realcli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Installed paths of the CLIs, relative to the repository root.
const (
	Claude = ".cache/claude-code/node_modules/.bin/claude"
	Codex  = ".cache/codex/node_modules/.bin/codex"
	Gemini = ".cache/gemini-cli/node_modules/.bin/gemini"
)

// Bin returns the absolute path of a real CLI: the one the environment
// variable env names, else rel (one of the constants above) under the
// repository root. Without it the test is skipped, except in CI
// (CI=true), which must run it; target is the make target that installs
// it.
func Bin(t testing.TB, env, rel, target string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		root, err := repoRoot()
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(root, rel)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
		msg := fmt.Sprintf("the real CLI is not at %s (run `make %s`, or set %s)", abs, target, env)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + ": CI must run these tests")
		}
		t.Skip(msg)
	}
	return abs
}

// repoRoot is the directory of go.mod at or above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod at or above the working directory")
		}
		dir = parent
	}
}

// ClaudeBin is the path of the real Claude Code CLI: RALPH_CLAUDE_BIN,
// else the one `make claude` installs (Bin).
func ClaudeBin(t testing.TB) string {
	t.Helper()
	return Bin(t, "RALPH_CLAUDE_BIN", Claude, "claude")
}

// CodexBin is the path of the real Codex CLI: RALPH_CODEX_BIN, else the
// one `make codex` installs (Bin).
func CodexBin(t testing.TB) string {
	t.Helper()
	return Bin(t, "RALPH_CODEX_BIN", Codex, "codex")
}

// GeminiBin is the path of the real Gemini CLI: RALPH_GEMINI_BIN, else
// the one `make gemini` installs (Bin).
func GeminiBin(t testing.TB) string {
	t.Helper()
	return Bin(t, "RALPH_GEMINI_BIN", Gemini, "gemini")
}
