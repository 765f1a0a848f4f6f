package activities

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/redact"
)

func TestLiveLog(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	l := &liveLog{redact: redact.New([]string{"API_TOKEN=sk-live-0123456789"})}
	l.add(agent.Event{}, now)
	l.add(agent.Event{Says: " \n "}, now)
	require.Empty(t, l.snapshot(), "an event that shows nothing")

	l.add(agent.Event{Says: "Let me run\n  the tests", Tool: "Bash", ToolSubject: "TOKEN=sk-live-0123456789 go test ./..."}, now)
	l.add(agent.Event{Error: "API Error: 429"}, now)
	l.dir = "/work/app"
	l.add(agent.Event{Tool: "Edit", ToolSubject: "/work/app/internal/db/store.go"}, now)
	l.add(agent.Event{Tool: "Read", ToolSubject: "/etc/hosts"}, now)
	got := l.snapshot()
	require.Equal(t, []contract.LiveEvent{
		{Seq: 1, At: now, Kind: contract.LiveSays, Text: "Let me run the tests"},
		{Seq: 2, At: now, Kind: contract.LiveTool, Name: "Bash", Text: "TOKEN=[REDACTED:API_TOKEN] go test ./..."},
		{Seq: 3, At: now, Kind: contract.LiveError, Text: "API Error: 429"},
		{Seq: 4, At: now, Kind: contract.LiveTool, Name: "Edit", Text: "internal/db/store.go"},
		{Seq: 5, At: now, Kind: contract.LiveTool, Name: "Read", Text: "/etc/hosts"},
	}, got, "paths in the workspace are relative")
	require.Equal(t, []string{
		`0:05 ▸ says  "Let me run the tests"`,
		"0:05 ▸ Bash  TOKEN=[REDACTED:API_TOKEN] go test ./...",
		"0:05 ▸ error API Error: 429",
		"0:05 ▸ Edit  internal/db/store.go",
		"0:05 ▸ Read  /etc/hosts",
	}, tail(now.Add(-5*time.Second), got), "the lines the UI shows at the top of the heartbeat")

	for i := range 3 * contract.LiveLimit {
		l.add(agent.Event{Says: fmt.Sprintf("message %d %s", i, strings.Repeat("é", 500))}, now)
	}
	got = l.snapshot()
	require.Len(t, got, contract.LiveLimit)
	require.Equal(t, 5+3*contract.LiveLimit, got[len(got)-1].Seq)
	require.Equal(t, got[0].Seq+contract.LiveLimit-1, got[len(got)-1].Seq, "the last ones, in order")
	for _, e := range got {
		require.LessOrEqual(t, len(e.Text), contract.LiveTextLimit)
		require.True(t, strings.HasSuffix(e.Text, "…"))
	}
}

func TestLiveText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "folded onto one line", in: "Let me run\n\tthe  tests ", want: "Let me run the tests"},
		{name: "clear screen and title go whole", in: "a\x1b[2J\x1b]0;pwned\x07b", want: "ab"},
		{name: "clipboard write goes whole", in: "a \x1b]52;c;aGk=\x1b\\b", want: "a b"},
		{name: "format characters go", in: "a\u202eb\u200bc", want: "abc"},
		{name: "cut to the limit", in: strings.Repeat("x", 50), want: strings.Repeat("x", 37) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, liveText(tt.in, 40))
		})
	}
}
