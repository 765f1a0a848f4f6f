package contract

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func member(repo string, after ...string) ChangeSetMember {
	return ChangeSetMember{Repo: repo, After: after}
}

func TestChangeSetValidate(t *testing.T) {
	tests := []struct {
		name string
		spec ChangeSetSpec
		want string // "" for valid
	}{
		{"api then web", ChangeSetSpec{Name: "greeting", Task: "t", Members: []ChangeSetMember{member("acme/api"), member("acme/web", "acme/api")}}, ""},
		{"tasks of their own", ChangeSetSpec{Name: "g", Members: []ChangeSetMember{{Repo: "acme/api", Task: "a"}}}, ""},
		{"no name", ChangeSetSpec{Task: "t", Members: []ChangeSetMember{member("acme/api")}}, `name: "" is not a change set name`},
		{"upper-case name", ChangeSetSpec{Name: "Greeting", Task: "t", Members: []ChangeSetMember{member("acme/api")}}, `name: "Greeting"`},
		{"no repos", ChangeSetSpec{Name: "g", Task: "t"}, "repos: a change set needs at least one repository"},
		{"not owner/name", ChangeSetSpec{Name: "g", Task: "t", Members: []ChangeSetMember{member("api")}}, `repos[0].repo: "api" is not a GitHub repository (owner/name)`},
		{"twice", ChangeSetSpec{Name: "g", Task: "t", Members: []ChangeSetMember{member("acme/api"), member("Acme/API")}},
			"repos[1].repo: Acme/API is repos[0] already"},
		{"no task", ChangeSetSpec{Name: "g", Members: []ChangeSetMember{{Repo: "acme/api", Task: "a"}, member("acme/web")}},
			"repos[1].task: acme/web has no task, and the set has none"},
		{"after an unknown", ChangeSetSpec{Name: "g", Task: "t", Members: []ChangeSetMember{member("acme/api", "acme/lib")}},
			`repos[0].after: "acme/lib" is not a repository of this set`},
		{"after itself", ChangeSetSpec{Name: "g", Task: "t", Members: []ChangeSetMember{member("acme/api", "acme/api")}},
			"repos[0].after: acme/api cannot come after itself"},
		{"a cycle", ChangeSetSpec{Name: "g", Task: "t", Members: []ChangeSetMember{
			member("acme/lib"), member("acme/api", "acme/web"), member("acme/web", "acme/cli"), member("acme/cli", "acme/api", "acme/lib")}},
			"repos[1].after: the order has a cycle: acme/api after acme/web after acme/cli after acme/api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestChangeSetOrder(t *testing.T) {
	s := ChangeSetSpec{Name: "g", Task: "t", Members: []ChangeSetMember{
		member("acme/web", "acme/api", "acme/lib"), // 0
		member("acme/api", "acme/lib"),             // 1
		member("acme/docs"),                        // 2
		member("acme/lib"),                         // 3
	}}
	require.NoError(t, s.Validate())
	require.Equal(t, []int{2, 3, 1, 0}, s.Order(), "each after what it builds on, else the file's order")
	require.Equal(t, []int{1, 3}, s.Before(0))
	require.Equal(t, 1, s.Index("ACME/Api"))
	require.Equal(t, -1, s.Index("acme/nope"))

	none := make([]bool, 4)
	require.Equal(t, []int{2, 3}, s.Ready(none, none), "side by side where the order does not matter")
	done, started := make([]bool, 4), []bool{false, false, true, true}
	require.Empty(t, s.Ready(done, started), "nothing more until lib is done")
	done[3] = true
	require.Equal(t, []int{1}, s.Ready(done, started))
	done[1] = true
	require.Equal(t, []int{0}, s.Ready(done, []bool{false, true, true, true}))
}
