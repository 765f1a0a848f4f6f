package github

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

func TestDependsOn(t *testing.T) {
	repo := contract.Repo{Owner: "acme", Name: "app"}
	own := func(n ...int) []contract.IssueRef {
		var refs []contract.IssueRef
		for _, k := range n {
			refs = append(refs, contract.IssueRef{Number: k})
		}
		return refs
	}
	for _, tc := range []struct {
		name, body string
		want       []contract.IssueRef
	}{
		{"none", "Add a greeting. See #4 for context.", nil},
		{"depends on", "Depends on #1", own(1)},
		{"blocked by, several", "Blocked by: #1, #2 and #3.", own(1, 2, 3)},
		{"case and hyphen", "depends-on #7\nBLOCKED BY #8", own(7, 8)},
		{"the sentence ends", "Depends on #1. Fixes #9 too.", own(1)},
		{"other repositories", "Depends on acme/lib#4 and https://github.com/other/api/issues/12", []contract.IssueRef{
			{Owner: "acme", Name: "lib", Number: 4}, {Owner: "other", Name: "api", Number: 12}}},
		{"own repository spelled out", "Depends on Acme/App#5 and https://github.com/acme/app/issues/6", own(5, 6)},
		{"a heading and a task list", "## Blocked by\n\n- [ ] #1\n- [x] acme/lib#2\n* #3\n\nMore text #9", []contract.IssueRef{
			{Number: 1}, {Owner: "acme", Name: "lib", Number: 2}, {Number: 3}}},
		{"a colon heading and a numbered list", "Depends on:\n1. #10\n2) #11\nDone.", own(10, 11)},
		{"code and comments are not read", "```\nDepends on #1\n```\n`Depends on #2`\n<!-- Blocked by #3 -->", nil},
		{"no word or entity before #", "Depends on abc#1 &#39 #2", own(2)},
		{"duplicates once", "Depends on #1\nBlocked by #1", own(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, dependsOn(tc.body, repo))
		})
	}
}

func TestLowestFirst(t *testing.T) {
	require.Equal(t, []int{1, 3, 2, 1}, lowestFirst([]int{3, 2, 1, 3}))
	require.Equal(t, []int{1, 3, 2, 1}, lowestFirst([]int{1, 3, 2, 1}))
	require.Equal(t, []int{4, 9, 4}, lowestFirst([]int{9, 4, 9}))
}
