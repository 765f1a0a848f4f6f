package responsesapi_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/testsuite/responsesapi"
)

// The tests in this file speak to the server over HTTP, without Codex.

// sse is one server-sent event.
type sse struct {
	event string
	data  map[string]any
}

// post sends body to POST /v1/responses and returns the response with its
// body read and, for a stream, its events.
func post(t *testing.T, srv *responsesapi.Server, body string, header ...string) (*http.Response, []sse) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.BaseURL()+"/responses", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		return resp, nil
	}
	var events []sse
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var ev sse
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data))
		case line == "":
			events = append(events, ev)
			ev = sse{}
		}
	}
	return resp, events
}

// names lists the event names.
func names(events []sse) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.event)
	}
	return out
}

// done returns the items of the response.output_item.done events.
func done(events []sse) []map[string]any {
	var out []map[string]any
	for _, e := range events {
		if e.event == "response.output_item.done" {
			out = append(out, e.data["item"].(map[string]any))
		}
	}
	return out
}

func TestStreamText(t *testing.T) {
	srv := responsesapi.New(func(*responsesapi.Request) responsesapi.Reply {
		return responsesapi.Text("Hello, this text is long enough to come in more than one delta.").WithReasoning("Think first.")
	})
	defer srv.Close()

	resp, events := post(t, srv, `{"model":"gpt-5","stream":true,"input":"hi"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.completed",
	}, names(events))
	for i, e := range events {
		require.Equal(t, e.event, e.data["type"])
		require.Equal(t, float64(i), e.data["sequence_number"])
	}
	var text string
	for _, e := range events {
		if e.event == "response.output_text.delta" {
			text += e.data["delta"].(string)
		}
	}
	require.Equal(t, "Hello, this text is long enough to come in more than one delta.", text)
	items := done(events)
	require.Equal(t, "reasoning", items[0]["type"])
	require.Equal(t, "message", items[1]["type"])
	require.Equal(t, "assistant", items[1]["role"])

	completed := events[len(events)-1].data["response"].(map[string]any)
	require.Equal(t, "completed", completed["status"])
	require.Equal(t, "gpt-5", completed["model"])
	usage := completed["usage"].(map[string]any)
	require.Greater(t, usage["input_tokens"], 0.0)
	require.Equal(t, usage["input_tokens"].(float64)+usage["output_tokens"].(float64), usage["total_tokens"])
	require.Greater(t, usage["output_tokens_details"].(map[string]any)["reasoning_tokens"], 0.0)

	got := srv.Responses()
	require.Len(t, got, 1)
	require.Equal(t, "hi", got[0].Prompt())
	require.Equal(t, int(usage["input_tokens"].(float64)), got[0].Replied.InputTokens)
}

func TestStreamToolCalls(t *testing.T) {
	const cmd = `echo "a & b" > x.txt`
	tests := []struct {
		name  string
		tools string // the request's tools and input items
		reply responsesapi.Reply
		// typ, name and input of the call the reply streams.
		typ, callName, input string
	}{
		{
			name:  "exec_command",
			tools: `"tools":[{"type":"function","name":"exec_command"},{"type":"custom","name":"apply_patch"}]`,
			reply: responsesapi.Shell(cmd),
			typ:   "function_call", callName: "exec_command", input: `{"cmd":"echo \"a & b\" > x.txt"}`,
		},
		{
			name:  "shell_command",
			tools: `"tools":[{"type":"function","name":"shell_command"}]`,
			reply: responsesapi.Shell(cmd),
			typ:   "function_call", callName: "shell_command", input: `{"command":"echo \"a & b\" > x.txt"}`,
		},
		{
			name:  "shell",
			tools: `"tools":[{"type":"function","name":"shell"}]`,
			reply: responsesapi.Shell(cmd),
			typ:   "function_call", callName: "shell", input: `{"command":["bash","-lc","echo \"a & b\" > x.txt"]}`,
		},
		{
			name:  "code_mode",
			tools: `"input":[{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec"},{"type":"function","name":"wait"}]}]}]`,
			reply: responsesapi.Shell(cmd),
			typ:   "custom_tool_call", callName: "exec",
			input: "const r = await tools.exec_command({cmd: \"echo \\\"a & b\\\" > x.txt\"});\ntext(r.output ?? \"\");\nif (r.exit_code) text(\"exit code \" + r.exit_code);\n",
		},
		{
			name:  "no_shell_offered",
			reply: responsesapi.Shell(cmd),
			typ:   "function_call", callName: "exec_command", input: `{"cmd":"echo \"a & b\" > x.txt"}`,
		},
		{
			name:  "apply_patch_custom",
			tools: `"tools":[{"type":"function","name":"exec_command"},{"type":"custom","name":"apply_patch"}]`,
			reply: responsesapi.ApplyPatch("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n"),
			typ:   "custom_tool_call", callName: "apply_patch", input: "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n",
		},
		{
			name:  "apply_patch_function",
			tools: `"tools":[{"type":"function","name":"apply_patch"}]`,
			reply: responsesapi.ApplyPatch("*** Begin Patch\n*** End Patch\n"),
			typ:   "function_call", callName: "apply_patch", input: `{"input":"*** Begin Patch\n*** End Patch\n"}`,
		},
		{
			name:  "apply_patch_code_mode",
			tools: `"input":[{"type":"additional_tools","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec"}]}]}]`,
			reply: responsesapi.ApplyPatch("*** Begin Patch\n*** End Patch\n"),
			typ:   "custom_tool_call", callName: "exec", input: "text(await tools.apply_patch(\"*** Begin Patch\\n*** End Patch\\n\"));\n",
		},
		{
			name:  "apply_patch_heredoc",
			tools: `"tools":[{"type":"function","name":"exec_command"}]`,
			reply: responsesapi.ApplyPatch("*** Begin Patch\n*** End Patch\n"),
			typ:   "function_call", callName: "exec_command", input: `{"cmd":"apply_patch <<'PATCH'\n*** Begin Patch\n*** End Patch\nPATCH"}`,
		},
		{
			name:  "function_call",
			reply: responsesapi.FunctionCall("view_image", map[string]string{"path": "a.png"}),
			typ:   "function_call", callName: "view_image", input: `{"path":"a.png"}`,
		},
		{
			name:  "custom_tool_call",
			reply: responsesapi.CustomToolCall("js", "1+1"),
			typ:   "custom_tool_call", callName: "js", input: "1+1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := responsesapi.New(func(*responsesapi.Request) responsesapi.Reply { return tc.reply })
			defer srv.Close()
			body := `{"model":"gpt-5","stream":true`
			if tc.tools != "" {
				body += "," + tc.tools
			}
			_, events := post(t, srv, body+"}")
			items := done(events)
			require.Len(t, items, 1, "a tool call and no message")
			item := items[0]
			require.Equal(t, tc.typ, item["type"])
			require.Equal(t, tc.callName, item["name"])
			require.NotEmpty(t, item["call_id"])
			if tc.typ == "function_call" {
				require.JSONEq(t, tc.input, item["arguments"].(string))
				require.Contains(t, names(events), "response.function_call_arguments.done")
			} else {
				require.Equal(t, tc.input, item["input"])
				require.Contains(t, names(events), "response.custom_tool_call_input.done")
			}
		})
	}
}

func TestRequestDecoding(t *testing.T) {
	var got *responsesapi.Request
	srv := responsesapi.New(func(req *responsesapi.Request) responsesapi.Reply {
		got = req
		return responsesapi.Text("ok")
	})
	defer srv.Close()
	body := `{"model":"gpt-6.1-sol","stream":true,"prompt_cache_key":"thread-1","instructions":"be brief",
	"tools":[{"type":"web_search"},{"type":"namespace","name":"multi_agent","tools":[{"type":"function","name":"spawn_agent"}]}],
	"input":[
		{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec"}]}]},
		{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"Do the thing."}]},
		{"type":"reasoning","summary":[]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"On it."}]},
		{"type":"custom_tool_call","call_id":"c1","name":"exec","input":"const r = await tools.exec_command({cmd: \"ls\"});"},
		{"type":"custom_tool_call_output","call_id":"c1","output":[{"type":"input_text","text":"Script completed"},{"type":"input_text","text":"a.txt\n"}]},
		{"type":"function_call","call_id":"c2","name":"exec_command","arguments":"{\"cmd\":\"cat a.txt\"}"},
		{"type":"function_call_output","call_id":"c2","output":"hello"},
		{"type":"function_call","call_id":"c3","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"sleep 9\"]}"},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"Carry on."}]}
	]}`
	post(t, srv, body, "thread-id", "thread-1", "x-codex-turn-metadata", `{"request_kind":"turn","thread_id":"thread-1"}`)
	require.NotNil(t, got)
	require.Equal(t, "gpt-6.1-sol", got.Model)
	require.Equal(t, "be brief", got.Instructions)
	require.Equal(t, "thread-1", got.PromptCacheKey)
	require.Equal(t, "thread-1", got.ThreadID())
	require.Equal(t, "turn", got.Kind())
	require.Equal(t, "Do the thing.", got.Prompt())
	require.Equal(t, "Carry on.", got.LastUserText())
	require.Equal(t, 3, got.Turn())
	require.True(t, got.HasTool("exec"))
	require.True(t, got.HasTool("spawn_agent"))
	require.True(t, got.HasText("a.txt"))
	require.False(t, got.HasText("nowhere"))
	require.Equal(t, []responsesapi.ToolCall{
		{Type: "custom_tool_call", Name: "exec", CallID: "c1", Input: `const r = await tools.exec_command({cmd: "ls"});`,
			Command: `const r = await tools.exec_command({cmd: "ls"});`, Output: "Script completed\na.txt\n", HasOutput: true},
		{Type: "function_call", Name: "exec_command", CallID: "c2", Input: `{"cmd":"cat a.txt"}`, Command: "cat a.txt", Output: "hello", HasOutput: true},
		{Type: "function_call", Name: "shell", CallID: "c3", Input: `{"command":["bash","-lc","sleep 9"]}`, Command: "bash -lc sleep 9"},
	}, got.ToolCalls())
	require.Equal(t, []string{`const r = await tools.exec_command({cmd: "ls"});`, "cat a.txt", "bash -lc sleep 9"}, got.Commands())
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		reply  responsesapi.Reply
		status int
		body   string
		header map[string]string
	}{
		{
			name: "error", reply: responsesapi.Error(418, `{"error":"teapot"}`, "x-thing: 1"),
			status: 418, body: `{"error":"teapot"}`, header: map[string]string{"X-Thing": "1"},
		},
		{
			name: "server_error", reply: responsesapi.ServerError(), status: 500,
			body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
		},
		{
			name: "bad_request", reply: responsesapi.BadRequest("input", "Bad."), status: 400,
			body: `{"error":{"message":"Bad.","type":"invalid_request_error","param":"input","code":null}}`,
		},
		{
			name: "rate_limit", reply: responsesapi.RateLimit(20 * time.Second), status: 429,
			body:   `{"error":{"message":"Rate limit reached for gpt-5 in organization org-scripted on tokens per min (TPM): Limit 30000, Used 29512, Requested 1834. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			header: map[string]string{"Retry-After": "20", "Retry-After-Ms": "20000", "X-Ratelimit-Reset-Tokens": "20s", "X-Ratelimit-Remaining-Tokens": "0"},
		},
		{
			name: "quota", reply: responsesapi.QuotaExceeded(), status: 429,
		},
		{
			name: "unauthorized", reply: responsesapi.Unauthorized(), status: 401,
		},
		{
			name: "model_not_found", reply: responsesapi.ModelNotFound("gpt-x"), status: 404,
			body: "{\"error\":{\"message\":\"The model `gpt-x` does not exist or you do not have access to it.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := responsesapi.New(func(*responsesapi.Request) responsesapi.Reply { return tc.reply })
			defer srv.Close()
			req, err := http.NewRequest(http.MethodPost, srv.BaseURL()+"/responses", strings.NewReader(`{"stream":true}`))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode)
			require.True(t, json.Valid(body), string(body))
			if tc.body != "" {
				require.Equal(t, tc.body, string(body))
			}
			for k, v := range tc.header {
				require.Equal(t, v, resp.Header.Get(k), k)
			}
			require.NotEmpty(t, resp.Header.Get("x-request-id"))
			require.Zero(t, srv.Responses()[0].Replied)
		})
	}
}

func TestUsageLimit(t *testing.T) {
	srv := responsesapi.New(func(*responsesapi.Request) responsesapi.Reply {
		return responsesapi.UsageLimit(90*time.Minute, "plus")
	})
	defer srv.Close()
	resp, _ := post(t, srv, `{}`)
	defer resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var got struct {
		Error struct {
			Type            string `json:"type"`
			PlanType        string `json:"plan_type"`
			ResetsAt        int64  `json:"resets_at"`
			ResetsInSeconds int    `json:"resets_in_seconds"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &got), string(body))
	require.Equal(t, "usage_limit_reached", got.Error.Type)
	require.Equal(t, "plus", got.Error.PlanType)
	require.Equal(t, 5400, got.Error.ResetsInSeconds)
	require.InDelta(t, time.Now().Add(90*time.Minute).Unix(), got.Error.ResetsAt, 5)
}

func TestFailedAndHold(t *testing.T) {
	srv := responsesapi.New(func(req *responsesapi.Request) responsesapi.Reply {
		switch req.LastUserText() {
		case "fail":
			return responsesapi.Failed("rate_limit_exceeded", "Please try again in 2s.")
		case "hold":
			return responsesapi.Hold(50 * time.Millisecond)
		}
		return responsesapi.Hold(50 * time.Millisecond).Then(responsesapi.Text("late"))
	})
	defer srv.Close()

	_, events := post(t, srv, `{"stream":true,"input":"fail"}`)
	require.Equal(t, []string{"response.created", "response.in_progress", "response.failed"}, names(events))
	failed := events[2].data["response"].(map[string]any)
	require.Equal(t, "failed", failed["status"])
	require.Equal(t, map[string]any{"code": "rate_limit_exceeded", "message": "Please try again in 2s."}, failed["error"])

	_, events = post(t, srv, `{"stream":true,"input":"hold"}`)
	require.Equal(t, []string{"response.created", "response.in_progress"}, names(events), "cut off unfinished")

	began := time.Now()
	_, events = post(t, srv, `{"stream":true,"input":"wait"}`)
	require.GreaterOrEqual(t, time.Since(began), 50*time.Millisecond)
	require.Equal(t, "response.completed", events[len(events)-1].event)
	require.Equal(t, "late", done(events)[0]["content"].([]any)[0].(map[string]any)["text"])
}

func TestPromptCache(t *testing.T) {
	srv := responsesapi.New(func(*responsesapi.Request) responsesapi.Reply { return responsesapi.Text("ok") })
	defer srv.Close()
	big := strings.Repeat("x", 8000)
	post(t, srv, `{"stream":true,"prompt_cache_key":"k","input":"`+big+`"}`)
	post(t, srv, `{"stream":true,"prompt_cache_key":"k","input":"`+big+`more"}`)
	post(t, srv, `{"stream":true,"prompt_cache_key":"other","input":"`+big+`"}`)
	reqs := srv.Responses()
	require.Zero(t, reqs[0].Replied.CachedTokens)
	require.Equal(t, reqs[0].Replied.InputTokens/128*128, reqs[1].Replied.CachedTokens, "the prefix sent before, in steps of 128")
	require.Zero(t, reqs[2].Replied.CachedTokens, "another conversation")
}

func TestOtherPaths(t *testing.T) {
	srv := responsesapi.New(func(*responsesapi.Request) responsesapi.Reply { return responsesapi.Text("ok") })
	defer srv.Close()
	var logged []string
	srv.SetLog(func(format string, args ...any) { logged = append(logged, format) })

	resp, err := http.Get(srv.BaseURL() + "/models")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	resp, err = http.Get(srv.URL() + "/v1/nowhere")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, string(body), "Invalid URL (GET /v1/nowhere)")
	require.Contains(t, logged, "responsesapi: unknown path: %s %s?%s")
	require.Len(t, srv.Requests(), 2)
	require.Empty(t, srv.Responses())
}

func TestCodexConfig(t *testing.T) {
	srv := responsesapi.New(nil)
	defer srv.Close()
	conf := srv.CodexConfig(0)
	require.Contains(t, conf, `model_provider = "responsesapi"`)
	require.Contains(t, conf, `base_url = "`+srv.URL()+`/v1"`)
	require.Contains(t, conf, `env_key = "RESPONSESAPI_KEY"`)
	require.Contains(t, conf, `wire_api = "responses"`)
	require.Contains(t, conf, "request_max_retries = 0\nstream_max_retries = 0\n")
	require.NotContains(t, srv.CodexConfig(-1), "retries")
}
