package words

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestCut(t *testing.T) {
	tests := []struct {
		name, s string
		n       int
		want    string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut", "abcdefgh", 6, "abc…"},
		{"between_runes", "ééééé", 6, "é…"},
		{"tiny", "abcdef", 2, "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Cut(tt.s, tt.n)
			require.Equal(t, tt.want, got)
			require.True(t, utf8.ValidString(got))
		})
	}
}

func TestOneLineClip(t *testing.T) {
	require.Equal(t, "a b c", OneLine("  a\n\tb  c \n"))
	require.Equal(t, "a b…", Clip("a\nb\ncdef", 6))
}

func TestPluralCount(t *testing.T) {
	require.Equal(t, "file", Plural(1, "file", "files"))
	require.Equal(t, "files", Plural(0, "file", "files"))
	require.Equal(t, "1 token", Count(1, "token"))
	require.Equal(t, "20550 tokens", Count(20550, "token"))
}

func TestOr(t *testing.T) {
	require.Equal(t, "codex", Or("codex", "claude"))
	require.Equal(t, "claude", Or("", "claude"))
}

func TestDollars(t *testing.T) {
	require.Equal(t, "$0.0125", Dollars(0.0125))
	require.Equal(t, "$0.0375", Dollars(0.037500000000000006))
	require.Equal(t, "$0.0000", Dollars(0))
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"folow", "follow", 1}, {"rnu", "run", 2}, {"run", "run", 0}, {"kitten", "sitting", 3}, {"ünï", "uni", 2},
	} {
		require.Equal(t, tt.want, Distance(tt.a, tt.b), "%q %q", tt.a, tt.b)
		require.Equal(t, tt.want, Distance(tt.b, tt.a), "%q %q", tt.b, tt.a)
	}
}
