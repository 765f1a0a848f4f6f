package keylog

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func fileLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func open(t *testing.T, path string, keep int) *Log {
	t.Helper()
	l, err := Open(path, keep)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "log")
	l, err := Open(path, 10)
	require.NoError(t, err)
	records := map[string]string{
		"plain":                     "",
		"wf id/run/question/1|tg:1": `{"chat":"1","message_id":"42"}`,
		"tab\there":                 "new\nline",
		"100%":                      "%41 is not A",
		"ünïcode":                   "✓",
	}
	for k, v := range records {
		require.NoError(t, l.Put(k, v))
	}
	for _, line := range fileLines(t, path) {
		require.NotContains(t, line, " ", "white space is escaped: %q", line)
		require.LessOrEqual(t, strings.Count(line, "\t"), 1, line)
	}
	require.Contains(t, fileLines(t, path), "plain", "a key without a value is its own line")
	require.NoError(t, l.Close())
	require.ErrorContains(t, l.Put("late", ""), "is closed")

	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	dir, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), dir.Mode().Perm())

	l = open(t, path, 10)
	require.Equal(t, records, maps.Collect(l.All()))
	v, ok := l.Get("tab\there")
	require.True(t, ok)
	require.Equal(t, "new\nline", v)
	_, ok = l.Get("missing")
	require.False(t, ok)
	require.Error(t, l.Put("", "v"), "an empty key")
}

func TestTornAndBadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("a1\nnot one!\nb2\tv%2\nk\tv\tw\nc3\tv3\nd4-cut-sh"), 0o644))
	l := open(t, path, 10)
	require.Equal(t, []string{"a1", "c3\tv3"}, fileLines(t, path), "rewritten without the torn line and what is no record")
	_, ok := l.Get("d4-cut-sh")
	require.False(t, ok)
	v, ok := l.Get("c3")
	require.True(t, ok)
	require.Equal(t, "v3", v)
	require.NoError(t, l.Put("d4", "x"))
	require.Equal(t, []string{"a1", "c3\tv3", "d4\tx"}, fileLines(t, path))
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

func TestCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, err := Open(path, 3)
	require.NoError(t, err)
	for i := range 6 {
		require.NoError(t, l.Put(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
	}
	require.Len(t, fileLines(t, path), 6, "twice keep: not compacted yet")
	require.NoError(t, l.Put("k6", "6"))
	require.Equal(t, []string{"k4\t4", "k5\t5", "k6\t6"}, fileLines(t, path), "compacted to the last keep")
	require.NoError(t, l.Put("k5", "five"), "a key again takes the new value, keeping its place")
	var keys []string
	for k := range l.All() {
		keys = append(keys, k)
	}
	require.Equal(t, []string{"k4", "k5", "k6"}, keys)
	_, ok := l.Get("k3")
	require.False(t, ok, "forgotten beyond keep")
	require.NoError(t, l.Close())

	// Reopened, it remembers the last keep of the file, the last value of
	// each.
	l = open(t, path, 3)
	require.Equal(t, map[string]string{"k4": "4", "k5": "five", "k6": "6"}, maps.Collect(l.All()))

	// A file of more than twice keep lines is compacted when opened.
	require.NoError(t, os.WriteFile(path, []byte("a\nb\nc\nd\ne\n"), 0o600))
	open(t, path, 2)
	require.Equal(t, []string{"d", "e"}, fileLines(t, path))
}

func TestOpenKeep(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "log"), 0)
	require.EqualError(t, err, "keep 0 keys: must be at least 1")
}
