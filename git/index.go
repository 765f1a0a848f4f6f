package git

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// gitlinkMode is the mode of an index entry that is a nested repository
// (a submodule's commit).
const gitlinkMode = 0o160000

// addAll are the arguments of a git add of every change in the work
// tree but the nested repositories the index at index holds: for each
// of those git would start a git status inside it, which reads that
// repository's configuration, the agent's to write (a filter driver
// there runs). A new nested repository is added as git always does (as
// a gitlink, read without a process of its own); once in the index it
// is left alone.
func (r *Repo) addAll(ctx context.Context, index string) []string {
	args := []string{"add", "--all"}
	links, err := gitlinks(index, r.sha256())
	if err != nil {
		// An index this reader does not know: git's own list, which
		// starts nothing in the nested repositories.
		out, lerr := r.git(ctx, "ls-files", "--stage", "-z")
		if lerr != nil {
			return args
		}
		links = linksOfStage(out)
	}
	if len(links) == 0 {
		return args
	}
	args = append(args, "--", ".")
	for _, l := range links {
		args = append(args, ":(exclude,literal)"+l)
	}
	return args
}

// sha256 reports whether the repository names its objects with SHA-256.
func (r *Repo) sha256() bool {
	data, err := os.ReadFile(filepath.Join(r.layout.CommonDir, "config"))
	return err == nil && bytes.Contains(bytes.ToLower(data), []byte("sha256"))
}

// linksOfStage reads the gitlinks of `git ls-files --stage -z`.
func linksOfStage(out string) []string {
	var links []string
	for _, e := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(e, "\t")
		if ok && strings.HasPrefix(meta, "160000 ") {
			links = append(links, path)
		}
	}
	return links
}

// gitlinks are the paths of the gitlinks in the index file at path
// (versions 2 to 4 of git's index format); none when there is no index.
func gitlinks(path string, sha256 bool) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// The mode is stored big-endian: without these bytes anywhere, no
	// entry is a gitlink.
	if !bytes.Contains(data, []byte{0, 0, 0xe0, 0}) {
		return nil, nil
	}
	return readGitlinks(data, sha256)
}

// readGitlinks parses an index's entries for its gitlinks.
func readGitlinks(data []byte, sha256 bool) ([]string, error) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, errors.New("not an index file")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index version %d", version)
	}
	n := binary.BigEndian.Uint32(data[8:12])
	hashLen := 20
	if sha256 {
		hashLen = 32
	}
	var links []string
	var prev []byte
	off := 12
	for range n {
		start := off
		fixed := 40 + hashLen + 2
		if off+fixed > len(data) {
			return nil, errors.New("index entry cut short")
		}
		mode := binary.BigEndian.Uint32(data[off+24 : off+28])
		flags := binary.BigEndian.Uint16(data[off+40+hashLen : off+fixed])
		off += fixed
		if flags&0x4000 != 0 && version >= 3 {
			off += 2
		}
		var name []byte
		if version == 4 {
			strip, used := offsetVarint(data[off:])
			if used == 0 || strip > len(prev) {
				return nil, errors.New("index path cut short")
			}
			off += used
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, errors.New("index path cut short")
			}
			name = append(append([]byte(nil), prev[:len(prev)-strip]...), data[off:off+end]...)
			off += end + 1
		} else {
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, errors.New("index path cut short")
			}
			name = data[off : off+end]
			// Entries are padded with 1 to 8 NULs to a multiple of 8.
			off = start + ((off + end - start + 8) &^ 7)
		}
		prev = name
		if mode == gitlinkMode {
			links = append(links, string(name))
		}
	}
	return links, nil
}

// offsetVarint decodes git's offset varint (index v4 path prefixes):
// the value and how many bytes it took (0 when cut short).
func offsetVarint(b []byte) (int, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := int(c & 127)
	i := 1
	for c&128 != 0 {
		if i >= len(b) || v > 1<<24 {
			return 0, 0
		}
		c = b[i]
		i++
		v = ((v + 1) << 7) + int(c&127)
	}
	return v, i
}
