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
	fail := func(reason string, args ...any) error {
		return &fieldError{spec: lookupSpec("github.token-file"), value: c.TokenFile, reason: fmt.Sprintf(reason, args...)}
	}
	f, err := os.Open(c.TokenFile)
	if err != nil {
		return "", fail("cannot be read: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return "", fail("cannot be read: %v", err)
	case !fi.Mode().IsRegular():
		return "", fail("is not a regular file: it must be a file holding the GitHub token")
	case fi.Mode().Perm()&0o077 != 0:
		return "", fail("is open to group or others (mode %04o), who could read the token: make it its owner's alone with chmod 600 %s", fi.Mode().Perm(), c.TokenFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFileSize+1))
	if err != nil {
		return "", fail("cannot be read: %v", err)
	}
	if len(data) > maxTokenFileSize {
		return "", fail("is larger than %d KiB: it must hold the GitHub token alone", maxTokenFileSize>>10)
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
