package testsuite_test

// Tests that run the real Gemini CLI (pinned, installed by `make gemini`)
// as a session's agent against testsuite/geminiapi, a scripted stand-in
// for the Gemini API. testsuite/geminiapi's own tests check the CLI's
// wire behaviour run by run; these check Ralph's sessions on it.

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/geminiapi"
	"github.com/durable-ralph/ralph/testsuite/realcli"
)

// geminiAgent is the real Gemini CLI with its API answered by script.
func geminiAgent(t *testing.T, script geminiapi.Script) (cliAgent, *geminiapi.Server) {
	t.Helper()
	bin := realcli.GeminiBin(t)
	srv := geminiapi.New(script)
	t.Cleanup(srv.Close)
	srv.SetLog(t.Logf)
	env, err := srv.CLIEnv(t.TempDir(), nil)
	require.NoError(t, err)
	return cliAgent{backend: "gemini", bin: bin, env: append(env, "PATH="+os.Getenv("PATH"))}, srv
}

func TestGeminiCLICompletesThreeStories(t *testing.T) {
	a, srv := geminiAgent(t, geminiapi.RalphPRDScript())
	a.model = "gemini-2.5-flash"
	res, _ := threeStorySession(t, a)
	require.GreaterOrEqual(t, res.Iterations, 4, "three stories and the completion claim")
	require.Zero(t, res.Totals.CostUnknown, "gemini-2.5-flash has a list price")
	require.Positive(t, res.Totals.CostUSD)
	require.NotEmpty(t, srv.Conversation())
}

// TestGeminiCLIWorkerKillResumes kills the worker while the CLI waits for
// the reply to its first tool call; the retry runs `gemini --resume` of
// the session the dead attempt reported, and the model sees the earlier
// turns and Ralph's "You were interrupted" in that conversation.
func TestGeminiCLIWorkerKillResumes(t *testing.T) {
	var held heldTurn
	a, srv := geminiAgent(t, holdingScript(&held, geminiapi.RalphPRDScript(), func(r geminiapi.Reply) geminiapi.Reply {
		return r.After(5 * time.Minute)
	}))
	requireWorkerKillResumes(t, a, &held, geminiSession, "attempt 2 ran gemini --resume of attempt 1's session",
		srv.Conversation, func(req *geminiapi.Request) int { return len(req.FunctionCalls()) })
}

// geminiSession is the session_id of the init event of a raw log.
func geminiSession(t *testing.T, path string) string {
	t.Helper()
	return eventField(t, path, "init", "session_id")
}

// TestGeminiCLIErrorsAreClassified has the API fail; the outcome is read
// from what the CLI itself printed.
func TestGeminiCLIErrorsAreClassified(t *testing.T) {
	t.Run("rate limit", func(t *testing.T) {
		a, _ := geminiAgent(t, func(*geminiapi.Request) geminiapi.Reply { return geminiapi.RateLimit(30 * time.Second) })
		began := time.Now()
		res := iterateWith(t, a)
		require.Equal(t, contract.OutcomeRateLimited, res.Outcome, res.Reason)
		require.WithinDuration(t, began.Add(30*time.Second), res.RateLimitResetsAt, 15*time.Second)
		require.Empty(t, res.Commit)
	})
	t.Run("server error", func(t *testing.T) {
		a, _ := geminiAgent(t, func(*geminiapi.Request) geminiapi.Reply {
			return geminiapi.Error(500, "The widget backend had an internal error.")
		})
		res := iterateWith(t, a)
		require.Equal(t, contract.OutcomeAgentError, res.Outcome, res.Reason)
		require.Contains(t, res.Reason, "internal error")
	})
	t.Run("bad API key", func(t *testing.T) {
		a, _ := geminiAgent(t, func(*geminiapi.Request) geminiapi.Reply {
			return geminiapi.Error(400, "API key not valid. Please pass a valid API key.")
		})
		_, err := iterate(t, a)
		require.ErrorContains(t, err, "agent failed permanently")
		require.ErrorContains(t, err, "API key not valid", "no retry can fix it: the session ends, saying why")
	})
}
