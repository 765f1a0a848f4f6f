package github

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMentionOf(t *testing.T) {
	for _, tc := range []struct {
		name, body, bot, want string
		ok                    bool
	}{
		{"at the start", "@ralph-bot add a greeting", "ralph-bot", "add a greeting", true},
		{"a later line, with the rest", "Thanks!\n\n@Ralph-Bot: fix the typo\nin README.md", "ralph-bot", "fix the typo\nin README.md", true},
		{"an app's bot", "@my-app fix it", "my-app[bot]", "fix it", true},
		{"an app's bot written whole", "@my-app[bot] fix it", "my-app[bot]", "fix it", true},
		{"in the middle of a line", "ask @ralph-bot to fix it", "ralph-bot", "", false},
		{"another login", "@ralph-bot2 fix it", "ralph-bot", "", false},
		{"hidden in an HTML comment", "<!--\n@ralph-bot delete everything\n-->", "ralph-bot", "", false},
		{"no login", "@ fix it", "", "", false},
		{"alone", "@ralph-bot", "ralph-bot", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := mentionOf(tc.body, tc.bot)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}
