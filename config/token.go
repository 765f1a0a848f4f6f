package config

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// maxTokenFileSize bounds what FileToken reads: a GitHub token is short.
const maxTokenFileSize = 64 << 10

// FileToken reads the GitHub token from TokenFile, or returns "" when
// TokenFile is not set. The file must be a regular file readable by its
// owner alone (no permission bit for group or others) and hold a token:
// surrounding white space, such as the trailing newline, is not part of
// it. Its errors name github.token-file and say how to fix the file.
func (c GitHubConfig) FileToken() (string, error) {
	if c.TokenFile == "" {
		return "", nil
	}
	data, err := readOwnerFile("github.token-file", c.TokenFile, "the GitHub token", "the token", maxTokenFileSize)
	if err != nil {
		return "", err
	}
	fail := func(reason string) error {
		return &fieldError{spec: lookupSpec("github.token-file"), value: c.TokenFile, reason: reason}
	}
	token := strings.TrimSpace(string(data))
	switch {
	case token == "":
		return "", fail("is empty: put the GitHub token in it")
	case strings.ContainsAny(token, " \t\r\n"):
		return "", fail("holds more than one word: it must hold the GitHub token alone")
	}
	return token, nil
}

// readOwnerFile reads the file name of the setting key, which holds what,
// a secret called short for short, in at most limit bytes. The file must
// be a regular file readable by its owner alone: no permission bit for
// group or others. Its errors name key and say how to fix the file.
func readOwnerFile(key, name, what, short string, limit int64) ([]byte, error) {
	fail := func(reason string, args ...any) error {
		return &fieldError{spec: lookupSpec(key), value: name, reason: fmt.Sprintf(reason, args...)}
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fail("cannot be read: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, fail("cannot be read: %v", err)
	case !fi.Mode().IsRegular():
		return nil, fail("is not a regular file: it must be a file holding %s", what)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fail("is open to group or others (mode %04o), who could read %s: make it its owner's alone with chmod 600 %s", fi.Mode().Perm(), short, name)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fail("cannot be read: %v", err)
	}
	if int64(len(data)) > limit {
		return nil, fail("is larger than %d KiB: it must hold %s alone", limit>>10, what)
	}
	return data, nil
}
