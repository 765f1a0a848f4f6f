package recycle_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/internal/recycle"
)

// inode is the inode number of the file at path.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Lstat(path)
	require.NoError(t, err)
	return st.Sys().(*syscall.Stat_t).Ino
}

func write(t *testing.T, d recycle.Dir, name, content string) {
	t.Helper()
	f, err := d.Create(name, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(content)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestRemovedFileIsCreatedAgainEmpty(t *testing.T) {
	d := recycle.Dir{Path: filepath.Join(t.TempDir(), "records")} // made by Create
	write(t, d, "a.json", "first record")
	st, err := os.Stat(filepath.Join(d.Path, "a.json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	was := inode(t, filepath.Join(d.Path, "a.json"))

	require.NoError(t, d.Remove("a.json"))
	require.NoFileExists(t, filepath.Join(d.Path, "a.json"))
	spare, err := os.ReadFile(filepath.Join(d.Path, ".spare-0"))
	require.NoError(t, err)
	require.Empty(t, spare, "a spare is emptied")

	write(t, d, "b.json", "second")
	require.Equal(t, was, inode(t, filepath.Join(d.Path, "b.json")), "the spare's file is used again")
	got, err := os.ReadFile(filepath.Join(d.Path, "b.json"))
	require.NoError(t, err)
	require.Equal(t, "second", string(got), "nothing of the first record is left")
	require.NoFileExists(t, filepath.Join(d.Path, ".spare-0"))
}

func TestRemoveKeepsAtMostSpares(t *testing.T) {
	d := recycle.Dir{Path: t.TempDir(), Spares: 2}
	for _, name := range []string{"a", "b", "c"} {
		write(t, d, name, name)
	}
	for _, name := range []string{"a", "b", "c"} {
		require.NoError(t, d.Remove(name))
	}
	entries, err := os.ReadDir(d.Path)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{".spare-0", ".spare-1"}, names)
	require.ErrorIs(t, d.Remove("a"), os.ErrNotExist)
}

func TestWriteFileReplacesWhole(t *testing.T) {
	d := recycle.Dir{Path: t.TempDir()}
	path := filepath.Join(d.Path, "result.json")
	require.NoError(t, d.WriteFile("result.json", []byte("one"), 0o600))
	write(t, d, "spent", "x")
	require.NoError(t, d.Remove("spent"))
	spare := inode(t, filepath.Join(d.Path, ".spare-0"))
	require.NoError(t, d.WriteFile("result.json", []byte("two, longer"), 0o600))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two, longer", string(got))
	require.Equal(t, spare, inode(t, path), "the new content is written to the spare")
	entries, err := os.ReadDir(d.Path)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file or spare is left: %v", entries)
}

// TestWriteFileIsWholeOrNothingForReaders reads the file while it is
// written again and again, from spares: every read finds one of the
// contents written whole, never a part or an empty file.
func TestWriteFileIsWholeOrNothingForReaders(t *testing.T) {
	d := recycle.Dir{Path: t.TempDir()}
	path := filepath.Join(d.Path, "record.json")
	contents := []string{strings.Repeat("a", 5000), strings.Repeat("b", 300), strings.Repeat("c", 9000)}
	require.NoError(t, d.WriteFile("record.json", []byte(contents[0]), 0o600))
	written := make(chan error, 1)
	go func() {
		for i := 1; i < 2000; i++ {
			// A file removed leaves the spare the next write takes.
			err := os.WriteFile(filepath.Join(d.Path, "spent"), []byte("x"), 0o600)
			if err == nil {
				err = d.Remove("spent")
			}
			if err == nil {
				err = d.WriteFile("record.json", []byte(contents[i%3]), 0o600)
			}
			if err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	reads := 0
	for {
		select {
		case err := <-written:
			require.NoError(t, err)
			require.Greater(t, reads, 0)
			return
		default:
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, contents, string(got))
		reads++
	}
}

func TestSparesThatAreNotRegularFilesAreNotUsed(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, spare string){
		"symlink": func(t *testing.T, spare string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			require.NoError(t, os.WriteFile(target, []byte("not yours"), 0o600))
			require.NoError(t, os.Symlink(target, spare))
			t.Cleanup(func() {
				got, err := os.ReadFile(target)
				require.NoError(t, err)
				require.Equal(t, "not yours", string(got), "the symlink's target is left alone")
			})
		},
		"fifo": func(t *testing.T, spare string) {
			require.NoError(t, syscall.Mkfifo(spare, 0o600))
		},
		"directory": func(t *testing.T, spare string) {
			require.NoError(t, os.Mkdir(spare, 0o700))
		},
	} {
		t.Run(name, func(t *testing.T) {
			d := recycle.Dir{Path: t.TempDir()}
			plant(t, filepath.Join(d.Path, ".spare-0"))
			write(t, d, "record", "mine")
			st, err := os.Lstat(filepath.Join(d.Path, "record"))
			require.NoError(t, err)
			require.True(t, st.Mode().IsRegular())
			got, err := os.ReadFile(filepath.Join(d.Path, "record"))
			require.NoError(t, err)
			require.Equal(t, "mine", string(got))
		})
	}
}

func TestCreateReplacesAFileOfTheSameName(t *testing.T) {
	d := recycle.Dir{Path: t.TempDir()}
	write(t, d, "stream.jsonl", "an earlier attempt's stream")
	write(t, d, "spent", "x")
	require.NoError(t, d.Remove("spent"))
	write(t, d, "stream.jsonl", "new")
	got, err := os.ReadFile(filepath.Join(d.Path, "stream.jsonl"))
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
}
