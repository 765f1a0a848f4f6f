package main

import "testing"

func TestRepoFromURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://github.com/acme/app.git", "acme/app"},
		{"https://github.com/acme/app", "acme/app"},
		{"https://github.example.com/acme/app.git/", "acme/app"},
		{"git@github.com:acme/app.git", "acme/app"},
		{"ssh://git@github.com/acme/app.git", "acme/app"},
		{"ssh://git@github.example.com:2222/acme/app", "acme/app"},
		{"/srv/git/app.git", ""},
		{"https://gitlab.com/group/sub/app.git", ""},
		{"", ""},
	} {
		if got := repoFromURL(tc.url); got != tc.want {
			t.Errorf("repoFromURL(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}
