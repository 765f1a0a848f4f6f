package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/tasks"
)

// initCommand is `starter init`.
type initCommand struct {
	noCommit bool
}

func (s *initCommand) flags(f *pflag.FlagSet) {
	f.BoolVar(&s.noCommit, "no-commit", false, "write the files but do not commit them")
}

func (s *initCommand) run(cctx *commandContext, args []string) error {
	return initWorkspace(cctx, orDot(args), s.noCommit)
}

// initWorkspace writes what a first session on dir needs and commits it.
func initWorkspace(cctx *commandContext, dir string, noCommit bool) error {
	out := cctx.stdout
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if top, err := gitOutput(cctx, abs, "rev-parse", "--show-toplevel"); err != nil {
		return fmt.Errorf("%s is not a git repository: run git init %s first", abs, dir)
	} else if top != abs {
		if real, err := filepath.EvalSymlinks(abs); err != nil || real != top {
			return fmt.Errorf("%s is inside the git repository %s: run init (and sessions) at its top, %s", abs, top, top)
		}
	}

	var wrote []string
	write := func(name, content string) error {
		path := filepath.Join(abs, name)
		if _, err := os.Stat(path); err == nil {
			fmt.Fprintf(out, "%s exists: left as it is\n", name)
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		wrote = append(wrote, name)
		fmt.Fprintf(out, "wrote %s\n", name)
		return nil
	}
	if err := write("ralph.yaml", config.Template()); err != nil {
		return err
	}
	if mode, err := tasks.Detect(abs); err == nil {
		fmt.Fprintf(out, "task file: %s (%s mode)\n", mode.File(), mode)
	} else if errors.Is(err, tasks.ErrNoTaskFile) {
		prd, err := examplePRD(filepath.Base(abs))
		if err != nil {
			return err
		}
		if err := write(contract.ModePRD.File(), prd); err != nil {
			return err
		}
	} else {
		return err
	}

	switch {
	case len(wrote) == 0:
		fmt.Fprintln(out, "Nothing to write.")
	case noCommit:
		fmt.Fprintf(out, "Commit them before the first run:\n  git -C %s add %s && git -C %s commit -m \"Set up Ralph\"\n", dir, strings.Join(wrote, " "), dir)
	default:
		args := append([]string{"add", "--"}, wrote...)
		if _, err := gitOutput(cctx, abs, args...); err != nil {
			return fmt.Errorf("git add: %w", err)
		}
		msg := "ralph: set up Ralph (" + strings.Join(wrote, ", ") + ")"
		ident := identityArgs(cctx, abs)
		commit := append(ident, "commit", "--quiet", "-m", msg, "--")
		if _, err := gitOutput(cctx, abs, append(commit, wrote...)...); err != nil {
			return fmt.Errorf("commit %s: %w (commit them yourself before the first run)", strings.Join(wrote, ", "), err)
		}
		as := ""
		if len(ident) > 0 {
			as = fmt.Sprintf(" as %s <%s> (git has no user.email here; sessions commit so too)", ralphName, ralphEmail)
		}
		fmt.Fprintf(out, "committed %s%s\n", strings.Join(wrote, ", "), as)
	}
	fmt.Fprintf(out, "Next: edit the stories in the task file, then run\n  %s\n", suggestRun(dir))
	return nil
}

// suggestRun is the run command for dir, in the form the user ran init.
func suggestRun(dir string) string {
	return commandLine("run", "--dev", "--follow", dir)
}

// examplePRD is a prd.json in snarktank/ralph's format with two small
// stories any repository can take.
func examplePRD(project string) (string, error) {
	name, err := json.Marshal(project)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(examplePRDFormat, name), nil
}

// examplePRDFormat is the example prd.json, %s its project's name as a
// JSON string.
const examplePRDFormat = `{
  "project": %s,
  "branchName": "ralph/getting-started",
  "description": "An example to try Ralph on: replace these stories with your own.",
  "userStories": [
    {
      "id": "US-001",
      "title": "Describe the project in RALPH-NOTES.md",
      "description": "As a new contributor, I want a short description of this project so that I know where to start.",
      "acceptanceCriteria": [
        "RALPH-NOTES.md exists at the top of the repository",
        "It says in one paragraph what the project does"
      ],
      "priority": 1,
      "passes": false,
      "notes": ""
    },
    {
      "id": "US-002",
      "title": "List how to build and test the project",
      "description": "As a new contributor, I want the commands that build and test the project so that I can check my changes.",
      "acceptanceCriteria": [
        "RALPH-NOTES.md has a section with the build and test commands",
        "Each command was run once and works"
      ],
      "priority": 2,
      "passes": false,
      "notes": ""
    }
  ]
}
`

// identityArgs are the arguments that make git commit in dir as Ralph
// when no identity is configured there (no user.email), the rule
// git.Repo.Commit follows for the commits of sessions: a fresh machine
// runs init as it runs sessions, without git's questions.
func identityArgs(ctx context.Context, dir string) []string {
	if email, _ := gitOutput(ctx, dir, "config", "user.email"); email != "" {
		return nil
	}
	return []string{"-c", "user.name=" + ralphName, "-c", "user.email=" + ralphEmail}
}

// The identity of Ralph's commits where git has none (git.Repo.Commit).
const (
	ralphName  = "Ralph"
	ralphEmail = "ralph@localhost"
)

// gitOutput runs git in dir and returns its trimmed output.
func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}
