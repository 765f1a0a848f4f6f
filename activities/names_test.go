package activities_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/contract"
)

// TestActivityNames checks that every activity name of the contract is a
// method the worker registers: workflows call activities by name only.
func TestActivityNames(t *testing.T) {
	tests := []struct {
		name string
		impl any
	}{
		{contract.ActivityHostReady, &activities.Agent{}},
		{contract.ActivityPrepareWorkspace, &activities.Agent{}},
		{contract.ActivityRunIteration, &activities.Agent{}},
		{contract.ActivityPrepareIssueWorktree, &activities.Agent{}},
		{contract.ActivityPushBranch, &activities.Agent{}},
		{contract.ActivityCheckAgents, &activities.Agent{}},
		{contract.ActivityPreflight, &github.Activities{}},
		{contract.ActivityPickIssue, &github.Activities{}},
		{contract.ActivityReadIssue, &github.Activities{}},
		{contract.ActivitySetLabels, &github.Activities{}},
		{contract.ActivityComment, &github.Activities{}},
		{contract.ActivityOpenPull, &github.Activities{}},
		{contract.ActivityPullState, &github.Activities{}},
		{contract.ActivityReplyToComment, &github.Activities{}},
		{contract.ActivityRequestReviewers, &github.Activities{}},
		{contract.ActivityMergePull, &github.Activities{}},
		{contract.ActivityOpenIssue, &github.Activities{}},
		{contract.ActivityCloneRepo, &activities.Agent{}},
		{contract.ActivityClosePull, &github.Activities{}},
		{contract.ActivityReadAnswer, &github.Activities{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok := reflect.TypeOf(tt.impl).MethodByName(tt.name)
			require.True(t, ok, "%T has no method %s", tt.impl, tt.name)
		})
	}
}
