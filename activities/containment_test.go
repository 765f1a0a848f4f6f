package activities_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

// pushClone makes a bare origin with main, and a clone of it on branch
// ralph/issue-7 with one commit adding file with content.
func pushClone(t *testing.T, file, content string) (clone, origin string) {
	t.Helper()
	seed := newRepo(t, map[string]string{"README.md": "hello\n"})
	origin = filepath.Join(t.TempDir(), "origin.git")
	gitRun(t, seed, "clone", "-q", "--bare", seed, origin)
	clone = filepath.Join(t.TempDir(), "clone")
	gitRun(t, seed, "clone", "-q", origin, clone)
	gitRun(t, clone, "config", "user.email", "dev@example.com")
	gitRun(t, clone, "config", "user.name", "Dev")
	gitRun(t, clone, "checkout", "-q", "-b", "ralph/issue-7")
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(clone, file)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(clone, file), []byte(content), 0o644))
	gitRun(t, clone, "add", "-A")
	gitRun(t, clone, "commit", "-q", "-m", "work")
	return clone, origin
}

func push(t *testing.T, clone string) (contract.PushResult, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	ag := &activities.Agent{}
	env.RegisterActivity(ag)
	val, err := env.ExecuteActivity(ag.PushBranch, contract.PushInput{
		Clone: clone, Branch: "ralph/issue-7", BaseRef: "refs/remotes/origin/main", TokenEnv: "RALPH_TEST_GH",
	})
	var res contract.PushResult
	if err == nil {
		require.NoError(t, val.Get(&res))
	}
	return res, err
}

func TestPushBranchRefusesSecrets(t *testing.T) {
	const password = "correct-horse-battery-staple"
	t.Setenv("DEPLOY_PASSWORD", password)
	// The queue's token, under a name that does not look secret.
	const token = "plain-looking-value-42"
	t.Setenv("RALPH_TEST_GH", token)
	ghToken := "gh" + "p_" + strings.Repeat("aB3x", 9) // put together, so this file holds none
	tests := []struct {
		name, file, content, secret, want string
	}{
		{name: "worker's secret value", file: "deploy/config.yml", content: "user: ci\npassword: " + password + "\n",
			secret: password, want: "the value of DEPLOY_PASSWORD at deploy/config.yml:2"},
		{name: "the queue's GitHub token", file: "notes.txt", content: "token " + token + "\n",
			secret: token, want: "the value of RALPH_TEST_GH at notes.txt:1"},
		{name: "token shape", file: "main.go", content: "package main\n\nconst token = \"" + ghToken + "\"\n",
			secret: ghToken, want: "a GitHub token at main.go:3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clone, origin := pushClone(t, tt.file, tt.content)
			_, err := push(t, clone)
			require.Error(t, err)
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.Equal(t, contract.ErrTypeSecretInPush, appErr.Type())
			require.True(t, appErr.NonRetryable())
			require.Contains(t, appErr.Error(), tt.want)
			require.NotContains(t, err.Error(), tt.secret, "the error never carries the secret")

			var found []contract.SecretFinding
			require.NoError(t, appErr.Details(&found))
			require.Len(t, found, 1)
			require.Equal(t, tt.file, found[0].File)
			details, err := json.Marshal(found)
			require.NoError(t, err)
			require.NotContains(t, string(details), tt.secret, "nor do its details")

			require.NotContains(t, gitRun(t, origin, "branch", "--list"), "ralph/issue-7", "nothing was pushed")
		})
	}
}

func TestPushBranchPushesWhatHoldsNoSecret(t *testing.T) {
	clone, origin := pushClone(t, "main.go", "package main\n\n// tokens start with gh"+"p_\n")
	res, err := push(t, clone)
	require.NoError(t, err)
	require.True(t, res.Pushed)
	require.Equal(t, 1, res.Commits)
	require.Contains(t, gitRun(t, origin, "branch", "--list"), "ralph/issue-7")
}

// TestIterationChangingAProtectedPathIsSetAside runs an agent that writes
// a workflow file beside ordinary work, in the working tree or in a
// commit of its own.
func TestIterationChangingAProtectedPathIsSetAside(t *testing.T) {
	tests := []struct {
		name      string
		commit    bool
		protected []string // nil: the default
		file      string
		setAside  bool
	}{
		{name: "workflow changed", file: ".github/workflows/ci.yml", setAside: true},
		{name: "agent committed it", commit: true, file: ".github/workflows/ci.yml", setAside: true},
		{name: "other file", file: "docs/ci.md"},
		{name: "nothing protected", protected: []string{}, file: ".github/workflows/ci.yml"},
		{name: "own pattern", protected: []string{"docs/**"}, file: "docs/ci.md", setAside: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
			start := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
			step := map[string]any{"write": map[string]string{tt.file: "on: push\n", "src/feature.go": "package src\n"}}
			if tt.commit {
				step["commit"] = true
			}
			env, _ := scenarioEnv(t, step)
			in := iterationInput(dir, 3)
			in.Branch = "main"
			in.Git.ProtectedPaths = tt.protected
			res, _, err := runActivity(t, &activities.Agent{Env: env}, in)
			require.NoError(t, err)

			if !tt.setAside {
				require.Empty(t, res.NotCommitted)
				require.NotEmpty(t, res.Commit, "committed as usual")
				require.Contains(t, gitRun(t, dir, "show", "--name-only", "--format=", "HEAD"), tt.file)
				return
			}
			patch := ".ralph/protected/iteration-3.patch"
			require.Equal(t, "changed protected path "+tt.file+" (patch: "+patch+"; allow with git.protected-paths: [])", res.NotCommitted)
			require.Equal(t, contract.OutcomeAgentError, res.Outcome, "the iteration failed")
			require.Empty(t, res.Commit)
			require.Equal(t, start, res.Head)
			require.Equal(t, start, strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD")), "HEAD is back at the start")
			require.Empty(t, strings.TrimSpace(gitRun(t, dir, "status", "--porcelain")), "the workspace is as the iteration found it")
			require.Len(t, res.Notices, 1)
			require.Contains(t, res.Notices[0], tt.file)
			if tt.commit {
				require.Contains(t, gitRun(t, dir, "reflog"), "commit: fake-claude", "the agent's commit was undone")
			}

			gitRun(t, dir, "apply", filepath.Join(dir, patch))
			got, err := os.ReadFile(filepath.Join(dir, tt.file))
			require.NoError(t, err)
			require.Equal(t, "on: push\n", string(got), "the patch brings the work back")
			require.FileExists(t, filepath.Join(dir, "src/feature.go"))
		})
	}
}
