package notify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

func TestSentRecordTornLine(t *testing.T) {
	w := newWorld(t, false)
	w.settings.Telegram.ChatIDs = []int64{11}
	n := notifier(t, w.settings, nil)
	first := question(time.Now())
	_, err := n.Send(context.Background(), first)
	require.NoError(t, err)
	require.NoError(t, n.Close())

	// A crash cut the record of the next notification short.
	path := filepath.Join(w.settings.StateDir, SentFileName)
	second := question(time.Now())
	second.Key = contract.NotifyKey(first.WorkflowID, first.RunID, contract.NotifyQuestion, 2)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(second.Key + "|telegram:11\t{\"chan")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	n = notifier(t, w.settings, nil)
	_, err = n.Send(context.Background(), first)
	require.NoError(t, err)
	require.Len(t, w.tg.messages(), 1, "the whole records are read")
	_, err = n.Send(context.Background(), second)
	require.NoError(t, err)
	require.Len(t, w.tg.messages(), 2, "the torn one is sent")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 6, "three targets, two notifications")
	for _, line := range lines[3:] {
		require.True(t, strings.HasPrefix(line, "ralph/ws%201@host/run-1/question/2|"), "white space is escaped: %s", line)
	}
}

func TestSentRecordCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), SentFileName)
	r, err := openSent(path, 2)
	require.NoError(t, err)
	for i := range 5 {
		key := contract.NotifyKey("wf", "run", contract.NotifyEnded, i)
		require.NoError(t, r.put("webhook", Sent{SentMessage: contract.SentMessage{Channel: contract.ChannelWebhook}, Key: key}))
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(data), "\n"), "compacted to the last two")
	_, ok := r.get(contract.NotifyKey("wf", "run", contract.NotifyEnded, 2), "webhook")
	require.False(t, ok, "forgotten beyond keep")
	s, ok := r.get(contract.NotifyKey("wf", "run", contract.NotifyEnded, 4), "webhook")
	require.True(t, ok)
	require.Equal(t, contract.ChannelWebhook, s.Channel)
	require.NoError(t, r.close())
}
