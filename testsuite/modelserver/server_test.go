package modelserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/testsuite/scripted"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data map[string]any
}

// post sends a Messages API request and returns the response.
func post(t *testing.T, ctx context.Context, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages?beta=true", strings.NewReader(string(b)))
	require.NoError(t, err)
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-api-key", "sk-ant-test-dummy")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// readSSE parses a whole event stream, checking each event's framing.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var events []sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data), line)
			require.Equal(t, name, data["type"], "event name and data type agree")
			events = append(events, sseEvent{name, data})
		case line == "":
			name = ""
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return events
}

func names(events []sseEvent) []string {
	var out []string
	for _, e := range events {
		if e.name != "ping" {
			out = append(out, e.name)
		}
	}
	return out
}

func userMsg(text string) map[string]any {
	return map[string]any{"model": "claude-test", "stream": true, "max_tokens": 100,
		"messages": []any{map[string]any{"role": "user", "content": text}}}
}

func TestStreamsTextAndToolUseInTheWireFormat(t *testing.T) {
	s := New(func(r *Request) Reply {
		if r.Turn() == 0 {
			return ToolUse("Write", map[string]any{"file_path": "/tmp/x", "content": strings.Repeat("é", 50)}).
				ToolUse("Bash", map[string]any{"command": "true"}).WithText("Writing.")
		}
		return Text("Done.")
	})
	defer s.Close()

	resp := post(t, context.Background(), s.URL(), userMsg("hello"))
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
	events := readSSE(t, resp.Body)
	// message_start, then per block: start, one or more deltas, stop; then
	// message_delta and message_stop.
	seq := strings.Join(names(events), " ")
	block := `content_block_start( content_block_delta)+ content_block_stop`
	require.Regexp(t, `^message_start( `+block+`){3} message_delta message_stop$`, seq)

	// Reassemble the message the way a client does.
	start := events[0].data["message"].(map[string]any)
	require.Equal(t, "claude-test", start["model"])
	require.Positive(t, start["usage"].(map[string]any)["input_tokens"])
	texts := map[int]string{}
	inputs := map[int]string{}
	var tools []string
	var stop string
	for _, e := range events {
		switch e.name {
		case "content_block_start":
			if cb := e.data["content_block"].(map[string]any); cb["type"] == "tool_use" {
				tools = append(tools, cb["name"].(string))
				require.True(t, strings.HasPrefix(cb["id"].(string), "toolu_"))
			}
		case "content_block_delta":
			i := int(e.data["index"].(float64))
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				texts[i] += d["text"].(string)
			case "input_json_delta":
				inputs[i] += d["partial_json"].(string)
			}
		case "message_delta":
			stop = e.data["delta"].(map[string]any)["stop_reason"].(string)
			require.Positive(t, e.data["usage"].(map[string]any)["output_tokens"])
		}
	}
	require.Equal(t, "Writing.", texts[0])
	require.Equal(t, []string{"Write", "Bash"}, tools)
	var in struct{ Content string }
	require.NoError(t, json.Unmarshal([]byte(inputs[1]), &in))
	require.Equal(t, strings.Repeat("é", 50), in.Content, "input JSON split without breaking characters")
	require.JSONEq(t, `{"command":"true"}`, inputs[2])
	require.Equal(t, "tool_use", stop)

	// The next turn carries the tool results; the server records them.
	resp2 := post(t, context.Background(), s.URL(), map[string]any{"model": "claude-test", "stream": true, "max_tokens": 100,
		"system": []any{map[string]any{"type": "text", "text": "sys"}},
		"messages": []any{
			map[string]any{"role": "user", "content": "hello"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "true"}}}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "text", "text": "ok"}}},
				map[string]any{"type": "text", "text": "and more"},
			}},
		}})
	events = readSSE(t, resp2.Body)
	resp2.Body.Close()
	require.Equal(t, "end_turn", events[len(events)-2].data["delta"].(map[string]any)["stop_reason"])

	reqs := s.Requests()
	require.Len(t, reqs, 2)
	r := reqs[1]
	require.Equal(t, "/v1/messages", r.Path)
	require.Equal(t, "beta=true", r.Query)
	require.Equal(t, "sk-ant-test-dummy", r.Header.Get("x-api-key"))
	require.Equal(t, "claude-test", r.Model)
	require.Equal(t, "sys", r.System)
	require.Equal(t, "hello", r.Prompt())
	require.Equal(t, "and more", r.LastUserText)
	require.Equal(t, []Block{{Type: "tool_result", Text: "ok", ToolUseID: "toolu_1"}}, r.ToolResults)
	require.Equal(t, 1, r.Turn())
	require.Len(t, r.ToolUses(), 1)
	require.True(t, r.HasText("and more"))
}

func TestErrorsLookLikeTheAPIs(t *testing.T) {
	s := New(func(*Request) Reply {
		return Error(429, "rate_limit_error", "slow down", map[string]string{"anthropic-ratelimit-unified-status": "rejected", "retry-after": "30"})
	})
	defer s.Close()
	resp := post(t, context.Background(), s.URL(), userMsg("hi"))
	defer resp.Body.Close()
	require.Equal(t, 429, resp.StatusCode)
	require.Equal(t, "rejected", resp.Header.Get("anthropic-ratelimit-unified-status"))
	require.Equal(t, "30", resp.Header.Get("retry-after"))
	require.NotEmpty(t, resp.Header.Get("request-id"))
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "error", body.Type)
	require.Equal(t, "rate_limit_error", body.Error.Type)
	require.Equal(t, "slow down", body.Error.Message)
	require.Equal(t, resp.Header.Get("request-id"), body.RequestID)
}

func TestHoldPingsUntilTheReplyOrTheClientLeaves(t *testing.T) {
	s := New(func(r *Request) Reply {
		if r.LastUserText == "slow" {
			return Hold(1200 * time.Millisecond).Then(Text("finally"))
		}
		return Hold(time.Minute)
	})
	defer s.Close()

	began := time.Now()
	resp := post(t, context.Background(), s.URL(), userMsg("slow"))
	events := readSSE(t, resp.Body)
	resp.Body.Close()
	require.GreaterOrEqual(t, time.Since(began), 1200*time.Millisecond)
	pings := 0
	for _, e := range events {
		if e.name == "ping" {
			pings++
		}
	}
	require.GreaterOrEqual(t, pings, 3)
	require.Equal(t, "message_start", events[0].name)
	require.Equal(t, "message_stop", events[len(events)-1].name)

	// A client that gives up ends the hold; the server does not wait out
	// the minute.
	ctx, cancel := context.WithCancel(context.Background())
	resp = post(t, ctx, s.URL(), userMsg("forever"))
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "event: message_start\n", line)
	cancel()
	resp.Body.Close()
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the held handler did not end when its client left")
	}
}

func TestHoldAloneCutsTheStreamOff(t *testing.T) {
	s := New(func(*Request) Reply { return Hold(100 * time.Millisecond) })
	defer s.Close()
	resp := post(t, context.Background(), s.URL(), userMsg("x"))
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	require.Contains(t, string(data), "event: message_start")
	require.NotContains(t, string(data), "message_stop")
}

func TestNonStreamingAndCountTokens(t *testing.T) {
	s := New(func(*Request) Reply { return Text("pong") })
	defer s.Close()
	body := userMsg("quota")
	body["stream"] = false
	body["max_tokens"] = 1
	resp := post(t, context.Background(), s.URL(), body)
	var msg struct {
		Type    string `json:"type"`
		Content []struct {
			Type, Text string
		} `json:"content"`
		StopReason string `json:"stop_reason"`
		Usage      Usage  `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&msg))
	resp.Body.Close()
	require.Equal(t, "message", msg.Type)
	require.Equal(t, "pong", msg.Content[0].Text)
	require.Equal(t, "end_turn", msg.StopReason)
	require.Positive(t, msg.Usage.InputTokens)

	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages/count_tokens?beta=true", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var ct struct {
		InputTokens int `json:"input_tokens"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ct))
	resp.Body.Close()
	require.Positive(t, ct.InputTokens)

	resp, err = http.Get(s.URL() + "/api/unknown")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Len(t, s.Requests(), 3)
	require.Len(t, s.Messages(), 1)
}

// conversation builds a request as the CLI sends it: the prompt (after a
// context reminder), a system message naming the working directory, then
// the given assistant tool calls each answered by a tool result.
func conversation(prompt string, calls ...Block) *Request {
	r := &Request{Record: scripted.Record{Method: http.MethodPost, Path: "/v1/messages"}}
	r.Messages = append(r.Messages,
		Message{Role: "user", Content: []Block{{Type: "text", Text: "<system-reminder>\ncontext\n</system-reminder>"}, {Type: "text", Text: prompt}}},
		Message{Role: "system", Content: []Block{{Type: "text", Text: "# Environment\n - Primary working directory: /work/ws\n - Platform: linux"}}},
	)
	for i, c := range calls {
		c.Type, c.ID = "tool_use", "toolu_"+string(rune('a'+i))
		r.Messages = append(r.Messages,
			Message{Role: "assistant", Content: []Block{c}},
			Message{Role: "user", Content: []Block{{Type: "tool_result", ToolUseID: c.ID, Text: "ok"}}})
	}
	return r
}

const storyPrompt = "# Ralph loop: iteration 2 of 10\n\nYou are one iteration.\n\n## This iteration: US-002 Add a widget\n\nAs a user I add a widget.\n"

func TestRalphPRDScriptPlaysOneStoryTurnByTurn(t *testing.T) {
	script := RalphPRDScript()
	var calls []Block
	var bash []string
	for turn := 0; ; turn++ {
		require.Less(t, turn, 6, "the story takes four turns")
		reply := script(conversation(storyPrompt, calls...))
		if len(reply.tools) == 0 {
			require.Equal(t, "Implemented US-002.", reply.text)
			break
		}
		require.Len(t, reply.tools, 1)
		tc := reply.tools[0]
		in, err := json.Marshal(tc.input)
		require.NoError(t, err)
		if turn == 0 {
			require.Equal(t, "Write", tc.name)
			require.JSONEq(t, `{"file_path":"/work/ws/story-US-002.txt","content":"Story US-002 is implemented.\n"}`, string(in))
		} else {
			require.Equal(t, "Bash", tc.name)
			bash = append(bash, tc.input.(map[string]any)["command"].(string))
		}
		calls = append(calls, Block{Name: tc.name, Input: in})
	}
	require.Len(t, bash, 2)
	require.Equal(t, `sed -i '/"id": "US-002"/ s/"passes": false/"passes": true/' prd.json`, bash[0])
	require.Contains(t, bash[1], ">> progress.txt")
	require.Contains(t, bash[1], "US-002")
}

func TestRalphPRDScriptResumesWhereTheConversationStopped(t *testing.T) {
	script := RalphPRDScript()
	write := Block{Name: "Write", Input: json.RawMessage(`{"file_path":"/work/ws/story-US-002.txt","content":"x"}`)}
	r := conversation(storyPrompt, write)
	r.Messages = append(r.Messages, Message{Role: "user", Content: []Block{{Type: "text", Text: "You were interrupted: the process running you stopped before you finished."}}})
	reply := script(r)
	require.Len(t, reply.tools, 1)
	require.Equal(t, "Bash", reply.tools[0].name)
	require.Contains(t, reply.tools[0].input.(map[string]any)["command"], "sed -i")
}

func TestRalphPRDScriptClaimsCompletionOnlyInTheVerifyIteration(t *testing.T) {
	script := RalphPRDScript()
	reply := script(conversation("# Ralph loop: iteration 4 of 10\n\n## This iteration: verify\n\nEvery story is already marked done.\n"))
	require.Empty(t, reply.tools)
	lines := strings.Split(reply.text, "\n")
	require.Equal(t, CompletePromise, lines[len(lines)-1])

	reply = script(conversation(storyPrompt))
	require.NotContains(t, reply.text, CompletePromise)

	// Side requests of the CLI get a plain answer.
	reply = script(&Request{Messages: []Message{{Role: "user", Content: []Block{{Type: "text", Text: "quota"}}}}})
	require.Equal(t, "OK", reply.text)
}
