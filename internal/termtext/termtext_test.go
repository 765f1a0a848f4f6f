package termtext

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostile are inputs and their safe text.
var hostile = []struct {
	name, in, want string
}{
	{name: "plain text", in: "hello, world\n", want: "hello, world\n"},
	{name: "UTF-8, tabs and newlines", in: "naïve\tcafé ✓ 日本語 🎉\nnext", want: "naïve\tcafé ✓ 日本語 🎉\nnext"},
	{name: "clear screen", in: "a\x1b[2Jb", want: "ab"},
	{name: "cursor home and erase line", in: "a\x1b[H\x1b[Kb", want: "ab"},
	{name: "cursor up and column", in: "x\x1b[10Ay\x1b[5Gz", want: "xyz"},
	{name: "SGR colour", in: "\x1b[1;31mred\x1b[0m", want: "red"},
	{name: "CSI with many parameters", in: "a\x1b[" + strings.Repeat("1;", 500) + "38;2;255;0;0mb", want: "ab"},
	{name: "private CSI: alternate screen", in: "a\x1b[?1049hb", want: "ab"},
	{name: "CSI with an intermediate: cursor style", in: "a\x1b[2 qb", want: "ab"},
	{name: "window title, BEL", in: "a\x1b]0;pwned\x07b", want: "ab"},
	{name: "window title OSC 2, ST", in: "a\x1b]2;pwned\x1b\\b", want: "ab"},
	{name: "OSC 52 clipboard, BEL", in: "a\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07b", want: "ab"},
	{name: "OSC 52 clipboard, ST", in: "a\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x1b\\b", want: "ab"},
	{name: "OSC 8 hyperlink", in: "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", want: "click"},
	{name: "DCS", in: "a\x1bP1$r0m\x1b\\b", want: "ab"},
	{name: "APC, PM and SOS", in: "a\x1b_x\x1b\\b\x1b^y\x1b\\c\x1bXz\x1b\\d", want: "abcd"},
	{name: "8-bit CSI", in: "a\x9b2Jb", want: "ab"},
	{name: "8-bit OSC ended by 8-bit ST", in: "a\x9d0;title\x9cb", want: "ab"},
	{name: "8-bit DCS", in: "a\x90q#0;2;0;0;0\x9cb", want: "ab"},
	{name: "UTF-8 C1 CSI", in: "a\u009b2Jb", want: "ab"},
	{name: "UTF-8 C1 OSC ended by UTF-8 C1 ST", in: "a\u009d0;title\u009cb", want: "ab"},
	{name: "other C1 controls", in: "a\x85\u0085\x8db", want: "ab"},
	{name: "two-byte escapes: reset, save cursor, charset", in: "a\x1bcb\x1b7c\x1b(0d", want: "abcd"},
	{name: "C0 controls", in: "a\rb\bc\x00d\x07e\x0cf\x7fg", want: "abcdefg"},
	{name: "bidirectional override and zero-width space", in: "a\u202eb\u200bc\u2066d", want: "abcd"},
	{name: "line and paragraph separators", in: "a\u2028b\u2029c", want: "abc"},
	{name: "invalid UTF-8", in: "a\xffb\xc3c", want: "abc"},
	{name: "ESC before a newline", in: "a\x1b\nb", want: "a\nb"},
	{name: "CSI cut by a newline", in: "a\x1b[12\nb", want: "a\nb"},
	{name: "unterminated OSC ends at the newline", in: "a\x1b]0;title\nb", want: "a\nb"},
	{name: "CAN cancels a sequence", in: "a\x1b[12\x18b", want: "ab"},
	{name: "ESC ESC [", in: "a\x1b\x1b[2Jb", want: "ab"},
	{name: "lone ESC at the end", in: "a\x1b", want: "a"},
	{name: "JSON line keeps its escapes as text", in: `{"text":"\u001b[2J"}` + "\n", want: `{"text":"\u001b[2J"}` + "\n"},
}

func TestString(t *testing.T) {
	for _, tt := range hostile {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, String(tt.in))
		})
	}
}

// TestWriterChunks feeds every input cut in two at every byte, and byte
// by byte: a sequence (or a character) split across chunks is removed
// (or kept) whole.
func TestWriterChunks(t *testing.T) {
	for _, tt := range hostile {
		t.Run(tt.name, func(t *testing.T) {
			for cut := 0; cut <= len(tt.in); cut++ {
				var out bytes.Buffer
				w := NewWriter(&out)
				for _, chunk := range []string{tt.in[:cut], tt.in[cut:]} {
					n, err := w.Write([]byte(chunk))
					require.NoError(t, err)
					require.Equal(t, len(chunk), n)
				}
				require.Equal(t, tt.want, out.String(), "cut at byte %d", cut)
			}
			var out bytes.Buffer
			w := NewWriter(&out)
			for i := range len(tt.in) {
				_, err := w.Write([]byte{tt.in[i]})
				require.NoError(t, err)
			}
			require.Equal(t, tt.want, out.String(), "byte by byte")
		})
	}
}

// TestWriterLoneEscapeAtBoundary is the case of the raw view's polls: a
// chunk ends in ESC, the next one holds the rest of the sequence.
func TestWriterLoneEscapeAtBoundary(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{name: "title", chunks: []string{"before\x1b", "]0;pwned\x07after"}, want: "beforeafter"},
		{name: "clipboard over three chunks", chunks: []string{"a\x1b", "]52;c;aGk=", "\x1b", "\\b"}, want: "ab"},
		{name: "clear screen", chunks: []string{"a\x1b", "[2J", "b"}, want: "ab"},
		{name: "ESC then text", chunks: []string{"a\x1b", "\nb"}, want: "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := NewWriter(&out)
			for _, c := range tt.chunks {
				_, err := w.Write([]byte(c))
				require.NoError(t, err)
			}
			require.Equal(t, tt.want, out.String())
		})
	}
}

// TestNoControlLeft checks, for every input, that what is left holds no
// ESC, no other control but tab and newline, and no C1 control.
func TestNoControlLeft(t *testing.T) {
	for _, tt := range hostile {
		for _, r := range String(tt.in) {
			ok := r == '\t' || r == '\n' || (r >= 0x20 && r < 0x7f) || r > 0x9f
			require.True(t, ok, "%s: %U left", tt.name, r)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWriterError(t *testing.T) {
	w := NewWriter(failWriter{})
	n, err := w.Write([]byte("\x1b[2J"))
	require.NoError(t, err, "nothing to write")
	require.Equal(t, 4, n)
	n, err = w.Write([]byte("text"))
	require.EqualError(t, err, "closed")
	require.Zero(t, n)
}
