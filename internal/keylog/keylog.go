// Package keylog holds a record of keys, each with a value, in memory and
// in an append-only file, so that what was done once is found done again
// after a restart: the webhook deliveries that had an effect, the
// notifications a channel took. It remembers the last keys it was given,
// compacting its file when the file holds twice as many, and it survives
// a crash that cut its last line short.
//
// The file holds one key a line, followed by a tab and the key's value
// when the value is not empty. Key and value are written with '%', white
// space and control characters as %XX, so a line is never broken by what
// it holds; a key without a value is its own line, as the webhook
// deliveries' files have always been.
package keylog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Log is a record of keys and their values. It is safe for concurrent
// use.
type Log struct {
	path string
	keep int

	mu sync.Mutex
	f  *os.File
	// ring holds the last keep keys, the oldest at next once it is full;
	// values indexes it.
	ring   []string
	next   int
	values map[string]string
	// lines counts the lines of the file.
	lines int
}

// Open opens the record at path, creating it (0600) and its directory
// (0700) when they do not exist, and remembers the last keep keys it
// holds. A last line without its newline, cut short by a crash, is
// dropped, and so are lines that are not records: the file is then
// written again without them.
func Open(path string, keep int) (*Log, error) {
	if keep < 1 {
		return nil, fmt.Errorf("keep %d keys: must be at least 1", keep)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the directory of %s: %w", path, err)
	}
	l := &Log{path: path, keep: keep, values: make(map[string]string)}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	// A last line without its newline is a write that a crash cut short:
	// what it recorded may be done again, and will then be recorded whole.
	torn := len(data) > 0 && data[len(data)-1] != '\n'
	if i := bytes.LastIndexByte(data, '\n'); torn {
		data = data[:i+1]
	}
	clean := !torn
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		key, value, ok := parseLine(sc.Text())
		if !ok {
			clean = false
			continue
		}
		l.remember(key, value)
		l.lines++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !clean || l.lines > 2*keep {
		if err := l.compact(); err != nil {
			return nil, err
		}
		return l, nil
	}
	if err := l.openAppend(); err != nil {
		return nil, err
	}
	return l, nil
}

// Get returns the value of key and whether the record holds key.
func (l *Log) Get(key string) (value string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	value, ok = l.values[key]
	return value, ok
}

// Put records key with value: it appends them to the file and syncs it
// before it returns, and compacts the file when it holds more than twice
// the keys kept. A key recorded again takes the new value.
func (l *Log) Put(key, value string) error {
	if key == "" {
		return errors.New("record an empty key: a key must not be empty")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("record %s: %s is closed", key, l.path)
	}
	if _, err := l.f.WriteString(formatLine(key, value)); err != nil {
		return fmt.Errorf("record %s in %s: %w", key, l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("record %s in %s: %w", key, l.path, err)
	}
	l.remember(key, value)
	l.lines++
	if l.lines > 2*l.keep {
		return l.compact()
	}
	return nil
}

// All yields the keys the record remembers with their values, oldest
// first, as they were when All was called.
func (l *Log) All() iter.Seq2[string, string] {
	l.mu.Lock()
	keys := l.ordered()
	values := make([]string, len(keys))
	for i, k := range keys {
		values[i] = l.values[k]
	}
	l.mu.Unlock()
	return func(yield func(string, string) bool) {
		for i, k := range keys {
			if !yield(k, values[i]) {
				return
			}
		}
	}
}

// Close closes the file; later records fail.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}

// remember adds key to the keys in memory, forgetting the oldest beyond
// keep. l.mu is held, or l is not shared yet.
func (l *Log) remember(key, value string) {
	if _, ok := l.values[key]; !ok {
		if len(l.ring) < l.keep {
			l.ring = append(l.ring, key)
		} else {
			delete(l.values, l.ring[l.next])
			l.ring[l.next] = key
			l.next = (l.next + 1) % l.keep
		}
	}
	l.values[key] = value
}

// ordered returns the keys in memory, oldest first. l.mu is held.
func (l *Log) ordered() []string {
	keys := make([]string, len(l.ring))
	for i := range l.ring {
		keys[i] = l.ring[(l.next+i)%len(l.ring)]
	}
	return keys
}

// openAppend opens the file to append to it.
func (l *Log) openAppend() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", l.path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("open %s: %w", l.path, err)
	}
	l.f = f
	return nil
}

// compact replaces the file with the keys in memory, oldest first, and
// opens it to append. l.mu is held, or l is not shared yet.
func (l *Log) compact() error {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	var b bytes.Buffer
	for _, k := range l.ordered() {
		b.WriteString(formatLine(k, l.values[k]))
	}
	tmp, err := os.CreateTemp(filepath.Dir(l.path), filepath.Base(l.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("compact %s: %w", l.path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b.Bytes())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), l.path)
	}
	if err != nil {
		// The old file is still whole: go on appending to it.
		if oerr := l.openAppend(); oerr != nil {
			return errors.Join(fmt.Errorf("compact %s: %w", l.path, err), oerr)
		}
		return fmt.Errorf("compact %s: %w", l.path, err)
	}
	l.lines = len(l.ring)
	return l.openAppend()
}

// formatLine is the line of key and value, with its newline.
func formatLine(key, value string) string {
	if value == "" {
		return escape(key) + "\n"
	}
	return escape(key) + "\t" + escape(value) + "\n"
}

// parseLine reads a line formatLine wrote, without its newline.
func parseLine(line string) (key, value string, ok bool) {
	k, v, _ := strings.Cut(line, "\t")
	if k == "" || strings.IndexFunc(k+v, isRaw) >= 0 {
		return "", "", false
	}
	key, err := url.PathUnescape(k)
	if err != nil {
		return "", "", false
	}
	value, err = url.PathUnescape(v)
	if err != nil {
		return "", "", false
	}
	return key, value, true
}

// isRaw reports whether r is white space or a control character, which
// a line holds only as %XX.
func isRaw(r rune) bool { return r <= ' ' || r == 0x7f }

// needsEscape reports whether r is written as %XX: '%' itself, white
// space and control characters.
func needsEscape(r rune) bool { return isRaw(r) || r == '%' }

// escape writes the bytes of s that needsEscape as %XX.
func escape(s string) string {
	if strings.IndexFunc(s, needsEscape) < 0 {
		return s
	}
	var b strings.Builder
	for i := range len(s) {
		if c := s[i]; c < 0x80 && needsEscape(rune(c)) {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
