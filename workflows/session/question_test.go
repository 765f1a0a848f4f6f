package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// issueEnv is a session of issue #5 whose GitHub activities are
// recorded; answers plays ReadAnswer's results in order (the last one
// again when they run out).
type issueEnv struct {
	*testsuite.TestWorkflowEnvironment
	answers  []contract.IssueAnswer
	reads    []contract.AnswerInput
	comments []contract.CommentInput
	labels   []contract.LabelsInput
}

func newIssueEnv(t *testing.T, answers ...contract.IssueAnswer) *issueEnv {
	env := &issueEnv{TestWorkflowEnvironment: newEnv(t), answers: answers}
	env.RegisterActivity(gha)
	env.OnActivity(gha.ReadAnswer, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.AnswerInput) (contract.IssueAnswer, error) {
		env.reads = append(env.reads, in)
		return env.answers[min(len(env.reads), len(env.answers))-1], nil
	}).Maybe()
	env.OnActivity(gha.Comment, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.CommentInput) (int64, error) {
		env.comments = append(env.comments, in)
		return 7, nil
	})
	env.OnActivity(gha.SetLabels, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.LabelsInput) error {
		env.labels = append(env.labels, in)
		return nil
	})
	return env
}

func issueInput() contract.SessionInput {
	in := workflowtest.SessionInput()
	in.Issue = &contract.IssueLink{Repo: contract.Repo{Owner: "acme", Name: "app"}, Number: 5, LabeledBy: "alice", Self: "ralph-bot", PollInterval: 10 * time.Minute}
	return in
}

// TestQuestionAnsweredOnTheIssue: the agent's question is posted on the
// issue with the question label and an @mention; a read-only user's
// comment is ignored (and listed), a write user's comment answers it; the
// comment then says who answered, the label goes and the answer reaches
// the next prompt.
func TestQuestionAnsweredOnTheIssue(t *testing.T) {
	env := newIssueEnv(t,
		contract.IssueAnswer{Asked: true, Ignored: []contract.Ignored{{ID: 40, Author: "mallory", Kind: contract.FeedbackComment, Why: "read permission"}}},
		contract.IssueAnswer{Asked: true, Found: true, Author: "bob", CommentID: 41, Body: "sqlite, it is enough here"},
	)
	s := &script{results: []step{asks("Which database?"), ok(workflowtest.Progressed(0, 2)), claims}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	var waiting contract.Status
	env.RegisterDelayedCallback(func() { waiting = queryStatus(t, env.TestWorkflowEnvironment) }, 5*time.Minute)

	res := runSession(t, env.TestWorkflowEnvironment, issueInput())
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.Equal(t, contract.StateWaitingForAnswer, waiting.State)

	require.Len(t, env.reads, 2, "read every poll interval until answered")
	require.Equal(t, []int64{40}, env.reads[1].Ignored, "an ignored comment is reported once")
	marker := contract.QuestionMarker("default-test-workflow-id", "cp-1")
	require.Equal(t, marker, env.reads[0].Marker)
	require.Len(t, env.comments, 2, "asked, then edited")
	for _, c := range env.comments {
		require.Equal(t, marker, c.Marker)
		require.Equal(t, 5, c.Number)
	}
	asked := env.comments[0].Body
	require.Contains(t, asked, "@alice **Durable Ralph has a question** (checkpoint `cp-1`")
	require.Contains(t, asked, "> Which database?")
	require.Contains(t, asked, "Options: postgres / sqlite")
	require.Contains(t, asked, "starter respond default-test-workflow-id --checkpoint cp-1")
	require.Contains(t, env.comments[1].Body, "**Answered** by @bob via a comment on #5: sqlite, it is enough here.")
	require.Equal(t, []contract.LabelsInput{
		{Repo: issueInput().Issue.Repo, Number: 5, Add: []string{contract.LabelQuestion}},
		{Repo: issueInput().Issue.Repo, Number: 5, Remove: []string{contract.LabelQuestion}},
	}, env.labels)
	require.Contains(t, s.inputs[1].Guidance[0], `The human answered: "sqlite, it is enough here"`)
	st := queryStatus(t, env.TestWorkflowEnvironment)
	require.Len(t, st.Ignored, 1)
	require.Equal(t, "mallory", st.Ignored[0].Author)
	require.Equal(t, "bob", st.Answered[0].Answer.By)
}

// TestQuestionAnsweredInTheCLIFirst: an answer through the respond update
// wins; the issue's comment says so and a later comment is not read.
func TestQuestionAnsweredInTheCLIFirst(t *testing.T) {
	env := newIssueEnv(t, contract.IssueAnswer{Asked: true})
	s := &script{results: []step{asks("Which database?"), ok(workflowtest.Progressed(0, 2)), claims}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	var u *update
	env.RegisterDelayedCallback(func() {
		u = sendUpdate(env.TestWorkflowEnvironment, contract.UpdateRespond, contract.Answer{ID: "cp-1", Approve: true, By: "carol", Via: "starter respond"})
	}, 15*time.Minute)
	res := runSession(t, env.TestWorkflowEnvironment, issueInput())
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.True(t, u.accepted)
	require.Len(t, env.reads, 1, "read at the first poll, not after the answer")
	require.Contains(t, env.comments[len(env.comments)-1].Body, "**Approved** by @carol via starter respond.")
}
