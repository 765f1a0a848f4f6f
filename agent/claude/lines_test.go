package claude

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Event lines as Claude Code 2.1.329 prints them. The ones marked
// "captured" are what the real CLI printed (lists shortened); the others
// follow the object literals in its source.
const (
	// captured
	lineInit = `{"type":"system","subtype":"init","cwd":"/work/repo","session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","tools":["Task","Bash","Edit","Read","Write"],"mcp_servers":[],"model":"claude-opus-5-5","permissionMode":"bypassPermissions","slash_commands":["compact","context"],"apiKeySource":"none","claude_code_version":"2.1.329","output_style":"default","agents":["general-purpose"],"skills":[],"plugins":[],"uuid":"c15dc1b1-d752-4e0f-ac2b-04a75ad645bb","fast_mode_state":"off"}`

	// captured
	lineAPIRetry = `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":616,"error_status":null,"error":"unknown","session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","uuid":"ff25946c-9c74-47af-a3e9-d4009bc2f2ef"}`

	lineText = `{"type":"assistant","message":{"id":"msg_01FxK8yKbWgq3oQ3u9cZr2tA","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":"I'll implement US-001 now."}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":4021,"cache_read_input_tokens":15180,"output_tokens":8,"service_tier":"standard"},"context_management":null},"parent_tool_use_id":null,"session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","uuid":"3f0c3a4e-9a0e-4b7e-8a59-0d6e3c2f1b77","timestamp":"2026-11-21T09:49:34.495Z"}`

	lineThinking = `{"type":"assistant","message":{"id":"msg_01FxK8yKbWgq3oQ3u9cZr2tA","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"thinking","thinking":"The story needs a list view.","signature":"EqQBCkYIBxgCKkB"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":8}},"parent_tool_use_id":null,"session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","uuid":"7a1e5b0c-3c55-4c1e-9d7e-2f1f0e3a4b5c","timestamp":"2026-11-21T09:49:34.401Z"}`

	lineToolUse = `{"type":"assistant","message":{"id":"msg_01FxK8yKbWgq3oQ3u9cZr2tA","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"Write","input":{"file_path":"/work/repo/story-US-001.txt","content":"List widgets\n"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":120}},"parent_tool_use_id":null,"session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","uuid":"5b0e2f5c-1f7d-4f39-9a43-8d9b0c6d2e11","timestamp":"2026-11-21T09:49:35.120Z"}`

	lineToolResult = `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01A09q90qw90lq917835lq9","type":"tool_result","content":"File created successfully at: /work/repo/story-US-001.txt"}]},"parent_tool_use_id":null,"session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","uuid":"c1b7e0d4-6a0b-4a53-a1a8-0b6f5e7d8c90","timestamp":"2026-11-21T09:49:35.300Z","tool_use_result":{"type":"create","filePath":"/work/repo/story-US-001.txt","content":"List widgets\n","structuredPatch":[],"originalFile":null}}`

	lineToolError = `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Exit code 1\nFAIL","is_error":true,"tool_use_id":"toolu_01Bq3c8d7e6f5g4h3i2j1k0l"}]},"parent_tool_use_id":null,"session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","uuid":"d2c8f1e5-7b1c-4b64-b2b9-1c7f6e8d9da1","timestamp":"2026-11-21T09:49:40.000Z","tool_use_result":{"stdout":"","stderr":"FAIL","interrupted":false,"isImage":false}}`

	lineSecondTurn = `{"type":"assistant","message":{"id":"msg_01Ww2uM7dV3n6e9VnS1yQmHc","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":"US-001 is done.\n\n<promise>COMPLETE</promise>"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":30}},"parent_tool_use_id":null,"session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","uuid":"e3d9a2f6-8c2d-4c75-83ca-2d8a7f9eaeb2","timestamp":"2026-11-21T09:49:41.000Z"}`

	lineSubagentTool = `{"type":"assistant","message":{"id":"msg_01Sub1aGeNt2tOoL3uSe4aBc","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"tool_use","id":"toolu_01SubAgentGrep000000000","name":"Grep","input":{"pattern":"widget"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":20}},"parent_tool_use_id":"toolu_01TaskCall0000000000000","session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","uuid":"f4eab307-9d3e-4d86-94db-3e9b8a0fbfc3","timestamp":"2026-11-21T09:49:36.000Z"}`

	lineSuccess = `{"duration_api_ms":10873,"stop_reason":"end_turn","session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","total_cost_usd":0.0125,"usage":{"input_tokens":1200,"cache_creation_input_tokens":4000,"cache_read_input_tokens":15000,"output_tokens":350,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard"},"modelUsage":{"claude-opus-5-5":{"inputTokens":1200,"outputTokens":350,"cacheReadInputTokens":15000,"cacheCreationInputTokens":4000,"webSearchRequests":0,"costUSD":0.0125,"contextWindow":200000,"maxOutputTokens":32000}},"permission_denials":[],"terminal_reason":"completed","is_error":false,"num_turns":3,"subtype":"success","api_error_status":null,"result":"US-001 is done.\n\n<promise>COMPLETE</promise>","type":"result","duration_ms":12034,"uuid":"5e111c1c-905b-45ca-bdb8-d7360a08b797"}`

	lineMaxTurns = `{"duration_api_ms":5000,"stop_reason":"tool_use","session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","total_cost_usd":0.02,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":20},"modelUsage":{},"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_01X","tool_input":{"command":"rm -rf /"}}],"terminal_reason":"max_turns","is_error":true,"num_turns":3,"subtype":"error_max_turns","errors":["Reached maximum number of turns (3)"],"type":"result","duration_ms":6000,"uuid":"0e8c2c41-5f0a-4bb1-9f3c-0d1c2b3a4f5e"}`

	// captured
	lineNotLoggedIn = `{"type":"assistant","message":{"diagnostics":null,"id":"cfa16a1d-2a79-47d3-8154-46aee9bfe26d","container":null,"model":"<synthetic>","role":"assistant","stop_details":null,"stop_reason":"stop_sequence","stop_sequence":"","type":"message","usage":{"output_tokens_details":null,"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"Not logged in · Please run /login"}],"context_management":null},"parent_tool_use_id":null,"session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","uuid":"45775f5d-8e78-4885-854f-98a8e2a1c80c","timestamp":"2026-11-21T09:49:34.495Z","error":"authentication_failed","is_api_error_message":true}`

	// captured
	lineNotLoggedInResult = `{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","total_cost_usd":0,"usage":{"output_tokens_details":{"thinking_tokens":0},"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"modelUsage":{},"permission_denials":[],"terminal_reason":"api_error","fast_mode_state":"off","safety_stops":0,"is_error":true,"num_turns":1,"subtype":"success","api_error_status":null,"result":"Not logged in · Please run /login","type":"result","duration_ms":217,"uuid":"5e111c1c-905b-45ca-bdb8-d7360a08b797","queued_turn_count":0,"result_index":0}`

	// captured
	lineNoNetwork = `{"type":"assistant","message":{"id":"1c93a4bb-9dcb-416c-a423-06549169bb9e","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","stop_sequence":"","type":"message","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"API Error: Can't reach the API server — check your internet or DNS (ENOTFOUND)"}],"context_management":null},"parent_tool_use_id":null,"session_id":"d2862401-c305-4843-9b74-0446c57c082b","uuid":"5b92c1d0-bde5-47a1-b88d-cbe63a28c4f6","timestamp":"2026-11-21T09:52:57.533Z","error":"server_error","is_api_error_message":true,"api_error":"connection_failed"}`

	// captured
	lineNoNetworkResult = `{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"d2862401-c305-4843-9b74-0446c57c082b","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"modelUsage":{},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":null,"api_error":"connection_failed","result":"API Error: Can't reach the API server — check your internet or DNS (ENOTFOUND)","type":"result","duration_ms":181225,"uuid":"6d870f50-f523-4b62-bdeb-4649fbce5dbb"}`

	// captured
	lineResumeNotFound = `{"type":"result","subtype":"error_during_execution","duration_ms":0,"duration_api_ms":0,"is_error":true,"num_turns":0,"stop_reason":null,"session_id":"11111111-2222-4333-8444-999999999999","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"modelUsage":{},"permission_denials":[],"uuid":"b07d8932-29d7-4289-aa04-e27f388a152a","errors":["No conversation found with session ID: 11111111-2222-4333-8444-999999999999"],"result_index":0}`

	lineRateLimitAllowed = `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1763744400,"rateLimitType":"five_hour","utilization":0.91,"isUsingOverage":false,"surpassedThreshold":0.9},"uuid":"0b6c7d8e-1f2a-4b3c-9d4e-5f6a7b8c9d0e","session_id":"407f6171-57b2-40cd-b369-04a6345f76fa"}`

	lineRateLimitRejected = `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1763744400,"rateLimitType":"five_hour","overageStatus":"rejected","overageDisabledReason":"out_of_credits","isUsingOverage":false},"uuid":"1c7d8e9f-2a3b-4c4d-8e5f-6a7b8c9d0e1f","session_id":"407f6171-57b2-40cd-b369-04a6345f76fa"}`

	lineUsageLimit = `{"type":"assistant","message":{"id":"9f1e2d3c-4b5a-4697-8877-665544332211","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","stop_sequence":"","type":"message","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"You've hit your 5-hour limit · resets 5pm (Europe/London)"}],"context_management":null},"parent_tool_use_id":null,"session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","uuid":"2d8e9f0a-3b4c-4d5e-9f6a-7b8c9d0e1f2a","timestamp":"2026-11-21T14:30:00.000Z","error":"rate_limit","is_api_error_message":true,"api_error":"usage_limit_reached"}`

	lineUsageLimitResult = `{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"407f6171-57b2-40cd-b369-04a6345f76fa","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"modelUsage":{},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":429,"api_error":"usage_limit_reached","result":"You've hit your 5-hour limit · resets 5pm (Europe/London)","type":"result","duration_ms":310,"uuid":"3e9f0a1b-4c5d-4e6f-8a7b-8c9d0e1f2a3b"}`
)

// lines joins event lines into the stdout of a run.
func lines(ls ...string) string {
	return strings.Join(ls, "\n") + "\n"
}

// parse feeds out, line by line, to a new Parser and returns its Summary.
func parse(t testing.TB, out string) Summary {
	t.Helper()
	p := NewParser()
	for l := range strings.Lines(out) {
		_, _ = p.Line([]byte(l))
	}
	return p.Summary()
}

func TestLinesAreValidJSON(t *testing.T) {
	for _, l := range []string{
		lineInit, lineAPIRetry, lineText, lineThinking, lineToolUse, lineToolResult, lineToolError,
		lineSecondTurn, lineSubagentTool, lineSuccess, lineMaxTurns, lineNotLoggedIn,
		lineNotLoggedInResult, lineNoNetwork, lineNoNetworkResult, lineResumeNotFound,
		lineRateLimitAllowed, lineRateLimitRejected, lineUsageLimit, lineUsageLimitResult,
	} {
		_, err := NewParser().Line([]byte(l))
		require.NoError(t, err, l)
	}
}
