package tasks

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckBranchName holds CheckBranchName to git's own rules: each name
// is checked by git check-ref-format --branch too, and both must agree.
func TestCheckBranchName(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"ralph/getting-started", true},
		{"feature/US-001_list.widgets", true},
		{"main", true},
		{"a@b", true},
		{"été", true},
		{"has space", false},
		{"-rf", false},
		{"/lead", false},
		{"trail/", false},
		{"a//b", false},
		{"a..b", false},
		{"dot.", false},
		{".hidden", false},
		{"a/.hidden", false},
		{"x.lock", false},
		{"a/x.lock/b", false},
		{"a@{b", false},
		{"HEAD", false},
		{"a~1", false},
		{"a^", false},
		{"a:b", false},
		{"what?", false},
		{"star*", false},
		{"br[ack", false},
		{`back\slash`, false},
		{"tab\there", false},
		{"del\x7f", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckBranchName(tt.name)
			require.Equal(t, tt.ok, err == nil, "CheckBranchName(%q) = %v", tt.name, err)
			gitErr := exec.Command("git", "check-ref-format", "--branch", tt.name).Run()
			require.Equal(t, tt.ok, gitErr == nil, "git check-ref-format --branch %q: %v", tt.name, gitErr)
		})
	}
}
