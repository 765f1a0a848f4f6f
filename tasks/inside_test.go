package tasks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

const outsideSuffix = ", outside the workspace; ralph reads task files only inside the workspace"

// linkSetup is a workspace ws and a directory out of it, each with a valid
// prd.json, where setup makes links.
type linkSetup struct {
	ws, out string
}

func newLinkSetup(t *testing.T) linkSetup {
	t.Helper()
	s := linkSetup{ws: t.TempDir(), out: t.TempDir()}
	for _, dir := range []string{filepath.Join(s.ws, "docs"), s.out} {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, contract.PRDFile), []byte(goodPRD), 0o644))
	}
	return s
}

// link makes the symlink name of the workspace point at target.
func (s linkSetup) link(t *testing.T, target, name string) {
	t.Helper()
	path := filepath.Join(s.ws, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.Symlink(target, path))
}

// resolved is path with its symlinks resolved (the temporary directory
// may be under one).
func resolved(t *testing.T, path string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(path)
	require.NoError(t, err)
	return r
}

func TestLoadRefusesSymlinkOutOfWorkspace(t *testing.T) {
	tests := []struct {
		name  string
		mode  contract.Mode
		setup func(t *testing.T, s linkSetup) (want string) // "" when the file loads
	}{
		{
			name: "absolute link to /etc/passwd", mode: contract.ModePRD,
			setup: func(t *testing.T, s linkSetup) string {
				s.link(t, "/etc/passwd", contract.PRDFile)
				return "prd.json is a symlink to /etc/passwd" + outsideSuffix
			},
		},
		{
			name: "relative link to a valid prd.json out of the workspace", mode: contract.ModePRD,
			setup: func(t *testing.T, s linkSetup) string {
				rel, err := filepath.Rel(s.ws, filepath.Join(s.out, contract.PRDFile))
				require.NoError(t, err)
				s.link(t, rel, contract.PRDFile)
				return "prd.json is a symlink to " + resolved(t, filepath.Join(s.out, contract.PRDFile)) + outsideSuffix
			},
		},
		{
			name: "link to a link that leads out", mode: contract.ModePRD,
			setup: func(t *testing.T, s linkSetup) string {
				s.link(t, "/etc/passwd", "docs/passwd")
				s.link(t, "docs/passwd", contract.PRDFile)
				return "prd.json is a symlink to /etc/passwd" + outsideSuffix
			},
		},
		{
			name: "link to nothing out of the workspace", mode: contract.ModePRD,
			setup: func(t *testing.T, s linkSetup) string {
				s.link(t, "/nonexistent/prd.json", contract.PRDFile)
				return "prd.json is a symlink to /nonexistent/prd.json" + outsideSuffix
			},
		},
		{
			name: "parent directory linked out", mode: contract.ModeIssue,
			setup: func(t *testing.T, s linkSetup) string {
				require.NoError(t, os.WriteFile(filepath.Join(s.out, "issue.md"), []byte("# Issue\n"), 0o644))
				s.link(t, s.out, contract.StateDir)
				return ".ralph/issue.md is in .ralph, a symlink to " + resolved(t, s.out) + outsideSuffix
			},
		},
		{
			name: "relative link inside the workspace", mode: contract.ModePRD,
			setup: func(t *testing.T, s linkSetup) string {
				s.link(t, "docs/prd.json", contract.PRDFile)
				return ""
			},
		},
		{
			name: "absolute link inside the workspace", mode: contract.ModePRD,
			setup: func(t *testing.T, s linkSetup) string {
				s.link(t, filepath.Join(s.ws, "docs", contract.PRDFile), contract.PRDFile)
				return ""
			},
		},
		{
			name: "parent directory linked inside the workspace", mode: contract.ModeIssue,
			setup: func(t *testing.T, s linkSetup) string {
				require.NoError(t, os.WriteFile(filepath.Join(s.ws, "docs", "issue.md"), []byte("# Issue\n"), 0o644))
				s.link(t, "docs", contract.StateDir)
				return ""
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newLinkSetup(t)
			want := tt.setup(t, s)
			st, err := Load(s.ws, tt.mode)
			if want == "" {
				require.NoError(t, err)
				require.Equal(t, tt.mode, st.Mode)
				return
			}
			require.EqualError(t, err, want)
			require.True(t, IsInvalidTaskFile(err))
			var oe *OutsideError
			require.ErrorAs(t, err, &oe)
			require.Equal(t, tt.mode.File(), oe.File)
		})
	}
}

// TestReadersRefuseSymlinkOutOfWorkspace: every task file the package
// reads, and the issue file it writes, is refused when it leads out of
// the workspace, and read when its link stays inside.
func TestReadersRefuseSymlinkOutOfWorkspace(t *testing.T) {
	tests := []struct {
		name string
		file string
		use  func(ws string) error
	}{
		{name: "Detect", file: contract.PRDFile, use: func(ws string) error { _, err := Detect(ws); return err }},
		{name: "BuildPrompt", file: contract.PRDFile, use: func(ws string) error {
			_, err := BuildPrompt(ws, PromptInput{Mode: contract.ModePRD, Iteration: 1})
			return err
		}},
		{name: "LoadLearnings", file: contract.LearningsFile, use: func(ws string) error {
			_, err := LoadLearnings(ws, contract.ModePRD, 0)
			return err
		}},
		{name: "LoadLearnings of memories", file: contract.MemoriesFile, use: func(ws string) error {
			_, err := LoadLearnings(ws, contract.ModePrompt, 0)
			return err
		}},
		{name: "LoadInstructions", file: "RALPH.md", use: func(ws string) error {
			_, err := LoadInstructions(ws, "RALPH.md")
			return err
		}},
		{name: "LoadMemories", file: "memories.md", use: func(ws string) error {
			_, err := LoadMemories(filepath.Join(ws, "memories.md"), MemoriesLimit)
			return err
		}},
		{name: "WriteFile", file: contract.IssueFile, use: func(ws string) error {
			return WriteFile(ws, contract.IssueFile, []byte("# Issue\n"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" outside", func(t *testing.T) {
			s := newLinkSetup(t)
			target := filepath.Join(s.out, "target.md")
			require.NoError(t, os.WriteFile(target, []byte("secret\n"), 0o644))
			s.link(t, target, tt.file)
			err := tt.use(s.ws)
			require.ErrorContains(t, err, " is a symlink to "+resolved(t, target)+outsideSuffix)
			data, rerr := os.ReadFile(target)
			require.NoError(t, rerr)
			require.Equal(t, "secret\n", string(data), "the target is untouched")
		})
		t.Run(tt.name+" inside", func(t *testing.T) {
			s := newLinkSetup(t)
			require.NoError(t, os.WriteFile(filepath.Join(s.ws, "docs", "target.md"), []byte("# Notes\n"), 0o644))
			target := "docs/target.md"
			if tt.file == contract.PRDFile {
				target = "docs/prd.json"
			}
			rel, err := filepath.Rel(filepath.Dir(filepath.Join(s.ws, tt.file)), filepath.Join(s.ws, target))
			require.NoError(t, err)
			s.link(t, rel, tt.file)
			require.NoError(t, tt.use(s.ws))
		})
	}
}

// TestCreateAllStaysInTheWorkspace: CreateAll makes the directory and
// its files in one walk; a directory on the way, or the directory
// itself, that the agent made a symlink out of the workspace is refused,
// and nothing is written outside.
func TestCreateAllStaysInTheWorkspace(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	fs, err := CreateAll(ws, ".ralph/logs/key", "a.prompt.md", "a.jsonl")
	require.NoError(t, err)
	require.Len(t, fs, 2)
	for _, f := range fs {
		_, err := f.WriteString("x")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	data, err := os.ReadFile(filepath.Join(ws, ".ralph", "logs", "key", "a.jsonl"))
	require.NoError(t, err)
	require.Equal(t, "x", string(data))

	for _, link := range []string{".ralph/logs/other", ".ralph/away"} {
		require.NoError(t, os.Symlink(outside, filepath.Join(ws, filepath.FromSlash(link))))
	}
	for _, sub := range []string{".ralph/logs/other", ".ralph/away/key"} {
		_, err := CreateAll(ws, sub, "a.jsonl")
		require.Error(t, err, sub)
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was made outside the workspace")
}
