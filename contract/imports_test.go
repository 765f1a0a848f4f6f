package contract_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/durable-ralph/ralph"

// deps lists the packages pkg links, itself included.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.Fields(string(out))
}

// TestImports holds the layout's one rule: imports point down. The
// contract imports no package of the project and no SDK (every part links
// it, the fake agent too, and pays for the SDK's start-up), and workflow
// code (workflows and the packages of each workflow, which it links
// all) links only the contract and internal/words of ours beside them: no
// activity code, no os/exec, no go-github.
func TestImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	tests := []struct {
		pkg     string
		allowed []string
	}{
		{module + "/contract", []string{module + "/contract"}},
		{module + "/workflows", nil},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.pkg, module+"/"), func(t *testing.T) {
			for _, d := range deps(t, tt.pkg) {
				require.NotEqual(t, "os/exec", d)
				require.False(t, strings.HasPrefix(d, "github.com/google/go-github"), "%s links %s", tt.pkg, d)
				if tt.pkg == module+"/contract" && !strings.HasPrefix(d, module+"/") {
					require.False(t, strings.Contains(strings.SplitN(d, "/", 2)[0], "."), "the contract links %s", d)
				}
				if strings.HasPrefix(d, module+"/") && tt.allowed != nil {
					require.Contains(t, tt.allowed, d, "%s links %s", tt.pkg, d)
				}
				if tt.allowed == nil && strings.HasPrefix(d, module+"/") {
					// The workflow packages link each other, the contract
					// and internal/words: no test helper, no activity.
					ok := d == module+"/contract" || d == module+"/internal/words" ||
						(strings.HasPrefix(d, module+"/workflows") && !strings.HasPrefix(d, module+"/workflows/workflowtest"))
					require.True(t, ok, "%s links %s", tt.pkg, d)
				}
			}
		})
	}
}
