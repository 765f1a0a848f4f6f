package geminiapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// post sends body to s at path and returns the status and the body of the
// answer.
func post(t *testing.T, s *Server, path, body string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Post(s.URL()+path, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

// conversation is a request body of the CLI's shape: the session context
// and the prompt in the first user turn, then a function call and its
// response.
const conversation = `{
  "contents": [
    {"role": "user", "parts": [{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}, {"text": "Make hello.txt"}]},
    {"role": "model", "parts": [{"text": "On it.", "thought": true}, {"functionCall": {"name": "run_shell_command", "args": {"command": "echo hi > hello.txt"}}}]},
    {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "done"}}}]}
  ],
  "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
  "tools": [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "write_file"}]}],
  "generationConfig": {"temperature": 1}
}`

func TestDecodesRequests(t *testing.T) {
	var got *Request
	s := New(func(r *Request) Reply { got = r; return Text("ok") })
	defer s.Close()

	status, _, _ := post(t, s, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", conversation)
	require.Equal(t, http.StatusOK, status)
	require.NotNil(t, got)
	require.Equal(t, "gemini-2.5-flash", got.Model)
	require.Equal(t, "streamGenerateContent", got.Action)
	require.True(t, got.Stream())
	require.True(t, got.IsGenerate())
	require.False(t, got.JSON)
	require.Equal(t, "alt=sse", got.Query)
	require.Equal(t, "You are Gemini CLI.", got.System)
	require.Equal(t, []string{"run_shell_command", "write_file"}, got.Tools)
	require.Equal(t, "Make hello.txt", got.Prompt())
	require.Equal(t, "Make hello.txt", got.LastUserText())
	require.Contains(t, got.SessionContext(), "This is the Gemini CLI.")
	require.Equal(t, 1, got.Turn())
	calls := got.FunctionCalls()
	require.Len(t, calls, 1)
	require.Equal(t, "echo hi > hello.txt", calls[0].Arg("command"))
	resps := got.FunctionResponses()
	require.Len(t, resps, 1)
	require.JSONEq(t, `{"output": "done"}`, string(resps[0].Response))
	require.True(t, got.HasText("done"))
	require.False(t, got.HasText("On it."), "HasText reads no thoughts")
	require.Len(t, s.Requests(), 1)
	require.Len(t, s.Conversation(), 1)
}

// events reads a server-sent-events body into its data payloads.
func events(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		data, ok := strings.CutPrefix(strings.TrimRight(sc.Text(), "\r"), "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(data), &m))
		out = append(out, m)
	}
	return out
}

func TestStreamsReplies(t *testing.T) {
	reply := Shell("ls -la").WithText(strings.Repeat("abcdefghij", 9))
	s := New(func(*Request) Reply { return reply })
	defer s.Close()

	status, h, body := post(t, s, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", conversation)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "text/event-stream", h.Get("Content-Type"))
	evs := events(t, body)
	require.Len(t, evs, 4, "three chunks of text, then the call")
	var text strings.Builder
	for i, ev := range evs {
		require.Equal(t, "gemini-2.5-pro", ev["modelVersion"])
		c := ev["candidates"].([]any)[0].(map[string]any)
		require.Equal(t, "model", c["content"].(map[string]any)["role"])
		parts := c["content"].(map[string]any)["parts"].([]any)
		if i < 3 {
			text.WriteString(parts[0].(map[string]any)["text"].(string))
			require.Nil(t, c["finishReason"])
			require.Nil(t, ev["usageMetadata"])
			continue
		}
		call := parts[0].(map[string]any)["functionCall"].(map[string]any)
		require.Equal(t, ShellTool, call["name"])
		require.Equal(t, "ls -la", call["args"].(map[string]any)["command"])
		require.Equal(t, "STOP", c["finishReason"])
		u := ev["usageMetadata"].(map[string]any)
		require.Greater(t, u["promptTokenCount"], 0.0)
		require.Equal(t, u["promptTokenCount"].(float64)+u["candidatesTokenCount"].(float64), u["totalTokenCount"])
	}
	require.Equal(t, strings.Repeat("abcdefghij", 9), text.String())
}

func TestGenerateContentIsOneResponse(t *testing.T) {
	s := New(func(*Request) Reply {
		return Text("Hello there.").WithThought("Hmm.").WithUsage(Usage{PromptTokens: 100, CandidatesTokens: 3, CachedTokens: 40, ThoughtsTokens: 7})
	})
	defer s.Close()

	status, _, body := post(t, s, "/v1beta/models/gemini-2.5-flash:generateContent", conversation)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{
	  "candidates": [{"content": {"role": "model", "parts": [{"text": "Hmm.", "thought": true}, {"text": "Hello there."}]}, "finishReason": "STOP", "index": 0}],
	  "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 3, "totalTokenCount": 110, "cachedContentTokenCount": 40, "thoughtsTokenCount": 7},
	  "modelVersion": "gemini-2.5-flash",
	  "responseId": "resp-000001"
	}`, body)
}

func TestAnswersSideRequestsItself(t *testing.T) {
	s := New(func(*Request) Reply {
		t.Error("the script got a side request")
		return Text("no")
	})
	defer s.Close()

	tests := []struct {
		name, config, want string
	}{
		{
			name:   "router",
			config: `{"responseMimeType": "application/json", "responseJsonSchema": {"type": "OBJECT", "properties": {"complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}}, "required": ["complexity_reasoning", "complexity_score"]}}`,
			want:   `{"complexity_reasoning": "ok", "complexity_score": 1}`,
		},
		{
			name:   "next speaker",
			config: `{"responseMimeType": "application/json", "responseJsonSchema": {"type": "object", "properties": {"reasoning": {"type": "string"}, "next_speaker": {"type": "string", "enum": ["user", "model"]}}}}`,
			want:   `{"reasoning": "ok", "next_speaker": "user"}`,
		},
		{
			name:   "loop detection",
			config: `{"responseMimeType": "application/json", "responseJsonSchema": {"type": "object", "properties": {"unproductive_state_analysis": {"type": "string"}, "unproductive_state_confidence": {"type": "number"}}}}`,
			want:   `{"unproductive_state_analysis": "ok", "unproductive_state_confidence": 0}`,
		},
		{
			name:   "JSON without a schema",
			config: `{"responseMimeType": "application/json"}`,
			want:   `{}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"contents": [{"role": "user", "parts": [{"text": "route this"}]}], "generationConfig": ` + tc.config + `}`
			status, _, out := post(t, s, "/v1beta/models/gemini-2.5-flash-lite:generateContent", body)
			require.Equal(t, http.StatusOK, status)
			var resp response
			require.NoError(t, json.Unmarshal([]byte(out), &resp))
			text := resp.Candidates[0].Content.Parts[0].(map[string]any)["text"].(string)
			require.JSONEq(t, tc.want, text)
		})
	}
	require.Empty(t, s.Conversation())
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		reply  Reply
		status int
		want   string
	}{
		{
			name:   "server error",
			reply:  Error(500, "Internal error encountered."),
			status: 500,
			want:   `{"error": {"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"}}`,
		},
		{
			name:   "bad request",
			reply:  Error(400, "Request contains an invalid argument."),
			status: 400,
			want:   `{"error": {"code": 400, "message": "Request contains an invalid argument.", "status": "INVALID_ARGUMENT"}}`,
		},
		{
			name:   "raw",
			reply:  RawError(403, `{"error": {"code": 403, "message": "no", "status": "PERMISSION_DENIED"}}`),
			status: 403,
			want:   `{"error": {"code": 403, "message": "no", "status": "PERMISSION_DENIED"}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(func(*Request) Reply { return tc.reply })
			defer s.Close()
			status, h, body := post(t, s, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", conversation)
			require.Equal(t, tc.status, status)
			require.Contains(t, h.Get("Content-Type"), "application/json")
			require.JSONEq(t, tc.want, body)
		})
	}
}

func TestRateLimit(t *testing.T) {
	s := New(func(*Request) Reply { return RateLimit(30 * time.Second) })
	defer s.Close()

	status, _, body := post(t, s, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", conversation)
	require.Equal(t, http.StatusTooManyRequests, status)
	var e struct {
		Error struct {
			Code    int
			Message string
			Status  string
			Details []map[string]any
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e))
	require.Equal(t, 429, e.Error.Code)
	require.Equal(t, "RESOURCE_EXHAUSTED", e.Error.Status)
	require.Contains(t, e.Error.Message, "Please retry in 30s.")
	var retry map[string]any
	for _, d := range e.Error.Details {
		if d["@type"] == "type.googleapis.com/google.rpc.RetryInfo" {
			retry = d
		}
	}
	require.Equal(t, "30s", retry["retryDelay"])
}

func TestOtherPaths(t *testing.T) {
	s := New(func(*Request) Reply { return Text("unused") })
	defer s.Close()

	status, _, body := post(t, s, "/v1beta/models/gemini-2.5-flash:countTokens", conversation)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `"totalTokens":`)

	var logged []string
	s.SetLog(func(format string, args ...any) { logged = append(logged, format) })
	status, _, body = post(t, s, "/v1beta/files", `{}`)
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, body, "NOT_FOUND")
	require.Contains(t, strings.Join(logged, "\n"), "unknown request")
	require.Empty(t, s.Conversation())
	require.Len(t, s.Requests(), 2)
}

func TestAfterDelaysTheReply(t *testing.T) {
	s := New(func(*Request) Reply { return Text("late").After(200 * time.Millisecond) })
	defer s.Close()
	began := time.Now()
	status, _, _ := post(t, s, "/v1beta/models/gemini-2.5-flash:generateContent", conversation)
	require.Equal(t, http.StatusOK, status)
	require.GreaterOrEqual(t, time.Since(began), 200*time.Millisecond)
}
