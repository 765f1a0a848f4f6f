package responsesapi_test

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/codex"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/responsesapi"
)

// The tests in this file run the real Codex CLI against the server.

func TestCodexText(t *testing.T) {
	srv := responsesapi.New(func(*responsesapi.Request) responsesapi.Reply {
		return responsesapi.Text("Hello from the scripted model.")
	})
	defer srv.Close()
	c := newCodex(t, srv, 0)

	r := c.exec("Say hello.\n", fresh()...)
	require.Equal(t, 0, r.code, r.Stderr)
	require.Equal(t, []string{"thread.started", "turn.started", "item.completed:agent_message", "turn.completed"}, r.types())
	require.NotEmpty(t, r.threadID())
	require.Equal(t, "Hello from the scripted model.", r.items("agent_message")[0]["text"])
	sum, v := r.verdict()
	require.Equal(t, contract.OutcomeSuccess, v.Outcome, v.Reason)
	require.Equal(t, r.threadID(), sum.SessionID)
	require.Equal(t, "Hello from the scripted model.", sum.FinalText)

	reqs := srv.Responses()
	require.Len(t, reqs, 1)
	req := reqs[0]
	require.Equal(t, "Say hello.\n", req.Prompt(), "the prompt is read from stdin")
	require.Equal(t, responsesapi.DefaultCodexModel, req.Model, "Codex 0.169's default model")
	require.Equal(t, r.threadID(), req.ThreadID())
	require.Equal(t, "turn", req.Kind())
	require.True(t, req.Stream)
	require.True(t, req.HasTool("exec"), "the default model runs code: %v", req.Tools)
	require.Equal(t, "Bearer sk-test-scripted", req.Header.Get("Authorization"))

	// Codex reports the usage the server sent: input_tokens counts the
	// cached tokens too.
	usage := r.events[len(r.events)-1]["usage"].(map[string]any)
	require.Greater(t, usage["input_tokens"], 1000.0)
	require.Equal(t, 0.0, usage["cached_input_tokens"])
	require.Greater(t, usage["output_tokens"], 0.0)
}

func TestCodexShell(t *testing.T) {
	for _, model := range []string{"", "gpt-5.5", "gpt-5.1-codex"} {
		t.Run(cmp.Or(model, "default"), func(t *testing.T) {
			srv := responsesapi.New(func(req *responsesapi.Request) responsesapi.Reply {
				calls := req.ToolCalls()
				if len(calls) == 0 {
					return responsesapi.Shell("printf 'made by codex\\n' > made.txt && cat made.txt").WithText("Making the file.")
				}
				return responsesapi.Text("Done: " + strings.TrimSpace(lastLine(calls[0].Output)))
			})
			defer srv.Close()
			c := newCodex(t, srv, 0)
			args := fresh()
			if model != "" {
				args = codex.Backend{}.Args(agent.Options{Model: model}, "")
			}

			r := c.exec("Make a file.", args...)
			require.Equal(t, 0, r.code, r.Stderr)
			got := c.read("made.txt")
			require.Equal(t, "made by codex\n", got)

			cmds := r.items("command_execution")
			require.Len(t, cmds, 1)
			require.Equal(t, `/bin/bash -lc "printf 'made by codex\\n' > made.txt && cat made.txt"`, cmds[0]["command"])
			require.Equal(t, 0.0, cmds[0]["exit_code"])
			require.Equal(t, "made by codex\n", cmds[0]["aggregated_output"])
			msgs := r.items("agent_message")
			require.Equal(t, "Done: made by codex", msgs[len(msgs)-1]["text"])

			reqs := srv.Responses()
			require.Len(t, reqs, 2)
			require.Equal(t, 1, reqs[1].Turn())
			require.Equal(t, []string{"printf 'made by codex\\n' > made.txt && cat made.txt"}, commandsOf(reqs[1]))
			if model != "" {
				require.Equal(t, model, reqs[0].Model)
			}
		})
	}
}

func TestCodexApplyPatch(t *testing.T) {
	srv := responsesapi.New(func(req *responsesapi.Request) responsesapi.Reply {
		if len(req.ToolCalls()) == 0 {
			return responsesapi.ApplyPatch("*** Begin Patch\n*** Add File: notes.txt\n+first line\n*** End Patch\n")
		}
		return responsesapi.Text("Patched.")
	})
	defer srv.Close()
	c := newCodex(t, srv, 0)

	r := c.exec("Add notes.", codex.Backend{}.Args(agent.Options{Model: "gpt-5.5"}, "")...)
	require.Equal(t, 0, r.code, r.Stderr)
	got := c.read("notes.txt")
	require.Equal(t, "first line\n", got)
	changes := r.items("file_change")
	require.Len(t, changes, 1)
	require.Equal(t, "completed", changes[0]["status"])
}

func TestCodexResume(t *testing.T) {
	srv := responsesapi.New(func(req *responsesapi.Request) responsesapi.Reply {
		calls := len(req.ToolCalls())
		switch {
		case calls == 0:
			return responsesapi.Shell("echo one > first.txt")
		case calls == 1 && req.LastUserText() == "Now check it.":
			return responsesapi.Shell("cat first.txt")
		}
		return responsesapi.Text(fmt.Sprintf("Turn %d done.", req.Turn()))
	})
	defer srv.Close()
	c := newCodex(t, srv, 0)

	first := c.exec("Write first.txt.", fresh()...)
	require.Equal(t, 0, first.code, first.Stderr)
	id := first.threadID()
	require.NotEmpty(t, id)
	sessions, err := filepath.Glob(filepath.Join(c.home, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	require.NoError(t, err)
	require.Len(t, sessions, 1, "Codex keeps the thread under CODEX_HOME/sessions/YYYY/MM/DD")

	n := len(srv.Responses())
	second := c.exec("Now check it.", resume(id)...)
	require.Equal(t, 0, second.code, second.Stderr)
	require.Equal(t, id, second.threadID(), "a resumed run prints the thread it resumed")
	require.Equal(t, "one\n", second.items("command_execution")[0]["aggregated_output"])

	reqs := srv.Responses()[n:]
	require.Len(t, reqs, 2)
	for _, req := range reqs {
		require.Equal(t, "Write first.txt.", req.Prompt(), "the earlier conversation is sent again")
		require.Equal(t, "Now check it.", req.LastUserText())
		require.Equal(t, id, req.ThreadID())
	}
	require.Equal(t, []string{"echo one > first.txt", "cat first.txt"}, commandsOf(reqs[1]))
	require.Equal(t, 3, reqs[1].Turn())

	// turn.completed reports the usage of the whole thread, the earlier
	// run's included.
	u1 := usageOf(t, first)
	u2 := usageOf(t, second)
	require.Greater(t, u2, u1)
	var sent int
	for _, req := range srv.Responses() {
		sent += req.Replied.InputTokens
	}
	require.Equal(t, sent, u2)
}

func TestCodexResumeMissingThread(t *testing.T) {
	srv := responsesapi.New(func(*responsesapi.Request) responsesapi.Reply { return responsesapi.Text("unused") })
	defer srv.Close()
	c := newCodex(t, srv, 0)

	r := c.exec("Carry on.", resume("01a205eb-d8ca-79c1-8c81-7ada326ad680")...)
	require.Equal(t, 1, r.code)
	require.Empty(t, r.Stdout)
	require.Contains(t, r.Stderr, "no rollout found for thread id 01a205eb-d8ca-79c1-8c81-7ada326ad680")
	require.Empty(t, srv.Requests())
	p := codex.Backend{}.NewParser(agent.Options{})
	v := p.Verdict(r.Err, r.Stderr, time.Now())
	require.Equal(t, contract.OutcomeAgentError, v.Outcome)
	require.True(t, p.ResumeFailed())
}

func TestCodexAPIErrors(t *testing.T) {
	tests := []struct {
		name    string
		reply   responsesapi.Reply
		message string
		// outcome is how the codex backend classifies the run.
		outcome contract.Outcome
	}{
		{"server_error", responsesapi.ServerError(), "We’re currently experiencing high demand", contract.OutcomeAgentError},
		{"bad_request", responsesapi.BadRequest("input", "Invalid value for 'input'."), `"param":"input"`, contract.OutcomeAgentError},
		{"unauthorized", responsesapi.Unauthorized(), "unexpected status 401 Unauthorized: Incorrect API key provided", contract.OutcomePermanent},
		{"rate_limit", responsesapi.RateLimit(20 * time.Second), "exceeded retry limit, last status: 429 Too Many Requests", contract.OutcomeRateLimited},
		{"usage_limit", responsesapi.UsageLimit(3*time.Hour, "plus"), "You’ve hit your usage limit.", contract.OutcomeRateLimited},
		{"quota", responsesapi.QuotaExceeded(), "Quota exceeded. Check your plan and billing details.", contract.OutcomePermanent},
		{"model_not_found", responsesapi.ModelNotFound("gpt-nope"), "The model `gpt-nope` does not exist", contract.OutcomePermanent},
		{"failed_rate_limit", responsesapi.Failed("rate_limit_exceeded", "Please try again in 11.054s."), "rate limit exceeded: Please try again in 11.054s.", contract.OutcomeRateLimited},
		{"cut_off", responsesapi.Hold(100 * time.Millisecond), "stream disconnected before completion", contract.OutcomeAgentError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := responsesapi.New(func(*responsesapi.Request) responsesapi.Reply { return tc.reply })
			defer srv.Close()
			c := newCodex(t, srv, 0)

			r := c.exec("Hi.", fresh()...)
			require.Equal(t, 1, r.code)
			require.Equal(t, []string{"thread.started", "turn.started", "error", "turn.failed"}, r.types())
			failed := r.events[len(r.events)-1]["error"].(map[string]any)["message"].(string)
			require.Contains(t, failed, tc.message)
			require.Len(t, srv.Requests(), 1, "retries are off")
			_, v := r.verdict()
			require.Equal(t, tc.outcome, v.Outcome, v.Reason)
		})
	}
}

func TestCodexRetries(t *testing.T) {
	n := 0
	srv := responsesapi.New(func(*responsesapi.Request) responsesapi.Reply {
		if n++; n < 3 {
			return responsesapi.ServerError()
		}
		return responsesapi.Text("Third time lucky.")
	})
	defer srv.Close()
	c := newCodex(t, srv, 2)

	r := c.exec("Hi.", fresh()...)
	require.Equal(t, 0, r.code, r.Stderr)
	require.Len(t, srv.Requests(), 3)
	require.Equal(t, "Third time lucky.", r.items("agent_message")[0]["text"])
}

func TestRalphPRDScript(t *testing.T) {
	srv := responsesapi.New(responsesapi.RalphPRDScript())
	defer srv.Close()
	c := newCodex(t, srv, 0)
	prd := `{"userStories": [
  {"id": "US-001", "title": "One", "passes": false},
  {"id": "US-002", "title": "Two", "passes": false}
]}
`
	c.write("prd.json", prd)
	c.write("progress.txt", "# Progress\n")

	prompt := "# Ralph loop: iteration 1\n\n## This iteration: US-002 Two\n\nImplement it.\n"
	r := c.exec(prompt, fresh()...)
	require.Equal(t, 0, r.code, r.Stderr)
	msgs := r.items("agent_message")
	require.Equal(t, "Implemented US-002.", msgs[len(msgs)-1]["text"])
	require.Len(t, r.items("command_execution"), 3)

	story := c.read("story-US-002.txt")
	require.Equal(t, "Story US-002 is implemented.\n", story)
	got := c.read("prd.json")
	require.Contains(t, got, `{"id": "US-001", "title": "One", "passes": false}`)
	require.Contains(t, got, `{"id": "US-002", "title": "Two", "passes": true}`)
	progress := c.read("progress.txt")
	require.Contains(t, progress, "US-002: wrote story-US-002.txt and marked it passing")

	verify := c.exec("# Ralph loop: iteration 2\n\n## This iteration: verify\n\nCheck everything.\n", fresh()...)
	require.Equal(t, 0, verify.code, verify.Stderr)
	require.Contains(t, verify.items("agent_message")[0]["text"], responsesapi.CompletePromise)
}

// TestRalphPRDScriptResume kills Codex in the middle of a story, as a
// worker that dies does, and resumes the thread: the script carries on
// with the steps left.
func TestRalphPRDScriptResume(t *testing.T) {
	script := responsesapi.RalphPRDScript()
	var hold bool
	srv := responsesapi.New(func(req *responsesapi.Request) responsesapi.Reply {
		if hold && len(req.ToolCalls()) == 1 {
			return responsesapi.Hold(time.Minute)
		}
		return script(req)
	})
	defer srv.Close()
	c := newCodex(t, srv, 0)
	c.write("prd.json", `{"userStories": [{"id": "US-001", "passes": false}]}`+"\n")
	prompt := "# Ralph loop: iteration 1\n\n## This iteration: US-001 One\n"

	hold = true
	killed := c.killAfter(prompt, fresh(), func() bool { return len(srv.Responses()) == 2 })
	id := killed.threadID()
	require.NotEmpty(t, id, "the thread id comes first: %s", killed.Stdout)
	require.FileExists(t, filepath.Join(c.dir, "story-US-001.txt"))

	hold = false
	n := len(srv.Responses())
	r := c.exec(prompt, resume(id)...)
	require.Equal(t, 0, r.code, r.Stderr)
	require.Equal(t, id, r.threadID())
	cmds := r.items("command_execution")
	require.Len(t, cmds, 2, "the story file is not written again")
	require.Contains(t, cmds[0]["command"], "sed -i")
	msgs := r.items("agent_message")
	require.Equal(t, "Implemented US-001.", msgs[len(msgs)-1]["text"])
	resumed := srv.Responses()[n]
	require.Equal(t, prompt, resumed.Prompt())
	calls := resumed.ToolCalls()
	require.Len(t, calls, 1, "the call of the killed run, with its output")
	require.True(t, calls[0].HasOutput)
}
