package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// originURL is the URL of the origin remote of the clone in dir.
func originURL(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "remote", "get-url", "origin").Output()
	if err != nil {
		return "", fmt.Errorf("%s has no origin remote (is it a clone of the GitHub repository?); give the repository with --repo owner/name: %w", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// githubURL matches the https and ssh forms of a repository URL:
// https://host/owner/name(.git), git@host:owner/name(.git),
// ssh://git@host(:port)/owner/name(.git).
var githubURL = regexp.MustCompile(`^(?:https?://[^/]+/|ssh://[^/]+/|[^@/\s]+@[^:/\s]+:)([^/\s]+)/([^/\s]+?)(?:\.git)?/?$`)

// repoFromURL is owner/name of a remote URL, or "" when it is not one of
// the forms GitHub uses.
func repoFromURL(u string) string {
	m := githubURL.FindStringSubmatch(strings.TrimSpace(u))
	if m == nil {
		return ""
	}
	return m[1] + "/" + m[2]
}
