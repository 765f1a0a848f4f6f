package pull

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// Adopted is one round on a pull request Ralph did not open, asked for
// by a writer's "@bot <instruction>" comment on it and allowed by
// queue.adopt-prs (the IssueQueue starts it, ID AdoptedRoundID): the
// pull request's branch is checked out in a work tree of the clone, a
// session works on the instruction (the pull request's text is its
// issue), its commits are pushed to the branch, and one comment says
// what was done (or why not) and asks the one who asked for a review.
// It follows nothing: checks, reviews and the merge stay the pull
// request author's.
func Adopted(ctx workflow.Context, in contract.FollowInput) (contract.FollowResult, error) {
	a := in.Adopt
	if a == nil || in.Current.Branch == "" {
		return contract.FollowResult{}, temporal.NewNonRetryableApplicationError(
			"invalid adopted round: the request and the pull request's branch are required", contract.ErrTypeInvalidInput, nil)
	}
	f, err := newFollower(ctx, in)
	if err != nil {
		return contract.FollowResult{}, err
	}
	f.st.Rounds = a.Round - 1
	f.event(ctx, fmt.Sprintf("@%s asked for a round on pull request #%d (branch %s): %s",
		a.By, in.Pull.Number, in.Current.Branch, words.Clip(words.OneLine(a.Instruction), 100)))
	var wt contract.WorktreeResult
	err = f.host.Execute(ctx, flow.GitOptions(fmt.Sprintf("work tree of pull request #%d", in.Pull.Number)), &wt, contract.ActivityPrepareIssueWorktree,
		contract.WorktreeInput{Clone: in.Clone, Number: in.Pull.Number, Branch: in.Current.Branch, Base: in.Base,
			Issue: adoptedText(in), TokenEnv: in.Repo.TokenEnv})
	if err != nil {
		if ctx.Err() != nil {
			return f.cancelled(ctx, ctx.Err())
		}
		return f.adoptedEnd(ctx, a.Round, "prepare the work tree", err)
	}
	f.in.BaseRef = wt.BaseRef
	feedback := []contract.Feedback{{Kind: contract.FeedbackComment, ID: a.CommentID, Author: a.By, Body: a.Instruction}}
	if err := f.round(ctx, contract.StateAddressingReview, reviewTask(feedback), "", feedback); err != nil {
		return f.cancelled(ctx, err)
	}
	return f.adoptedEnd(ctx, a.Round, "", nil) // a failed round said why on the pull request

}

// adoptedText is the pull request's text, as the round's session reads
// its issue.
func adoptedText(in contract.FollowInput) string {
	a := in.Adopt
	return fmt.Sprintf("# %s\n\nPull request #%d (%s), branch `%s` into `%s`, opened by @%s. A person with write access asked you to work on it: their request is the review comment below.\n\n%s\n",
		in.Issue.Title, in.Pull.Number, in.Pull.URL, in.Current.Branch, in.Base, a.Author, a.Body)
}

// adoptedEnd ends the adopted round: pushed, or failed at step (said on
// the pull request once, under round n's marker).
func (f *follower) adoptedEnd(ctx workflow.Context, n int, step string, err error) (contract.FollowResult, error) {
	res := contract.FollowResult{ReviewRounds: 1, CostUSD: f.st.CostUSD, Iterations: f.st.Iterations}
	switch {
	case err != nil:
		_ = f.roundFailed(ctx, n, step, err)
		res.Reason, res.Message = contract.ReasonFailed, step+": "+flow.RootMessage(err)
	case f.st.LastPushed == "":
		res.Reason, res.Message = contract.ReasonFailed, "the round pushed nothing"
	default:
		res.Reason, res.Message = contract.ReasonComplete, "pushed "+contract.ShortSHA(f.st.LastPushed)
	}
	f.status.Reason, f.status.Message = res.Reason, res.Message
	f.event(ctx, fmt.Sprintf("round on pull request #%d: %s (%s)", f.in.Pull.Number, res.Reason, res.Message))
	f.setState(ctx, contract.StateFollowingFinished, "")
	return res, nil
}
