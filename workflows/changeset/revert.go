package changeset

import (
	"cmp"
	"fmt"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// revertAll opens, for each member of merged (in merge order), a pull
// request that reverts its merge, the last merged first; left are those
// it could not revert (each said in the story and its status).
func (s *set) revertAll(ctx workflow.Context, merged []int, why string) (left []int) {
	for _, i := range slices.Backward(merged) {
		if err := s.revert(ctx, i, why); err != nil {
			m := &s.st.Members[i]
			m.Message = "could not revert it: " + flow.RootMessage(err)
			s.event(ctx, fmt.Sprintf("%s: %s", m.Repo, m.Message))
			left = append([]int{i}, left...)
		}
	}
	return left
}

// revert opens the pull request that reverts member i's merged one: a
// branch of one commit on its base, undoing the merge (made by the
// worker of the member's host, in its clone), and the pull request from
// it, each once however often retried.
func (s *set) revert(ctx workflow.Context, i int, why string) error {
	m := &s.st.Members[i]
	mi := s.in.Members[i]
	if m.MergeSHA == "" {
		// Merged by a person: GitHub says its commit.
		var res contract.MergeResult
		if err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("read the merge of #%d of %s", m.Pull, m.Repo)), contract.ActivityMergePull,
			contract.MergeInput{Repo: mi.Settings.Repo, Pull: m.Pull}).Get(ctx, &res); err != nil {
			return err
		}
		if !res.Merged || res.SHA == "" {
			return fmt.Errorf("GitHub does not say pull request #%d was merged (%s)", m.Pull, res.Refused)
		}
		m.MergeSHA = res.SHA
	}
	base := cmp.Or(mi.Settings.BaseBranch, s.pre[i].DefaultBranch)
	branch := contract.RevertBranch(s.in.Spec.Name, m.Pull)
	title := fmt.Sprintf("Revert #%d: change set %s rolled back", m.Pull, s.in.Spec.Name)
	body := fmt.Sprintf("Reverts #%d (merged as %s). Change set **%s** ended: %s. Its other pull requests were closed or reverted, so that no part of the set stays merged without the rest.",
		m.Pull, contract.ShortSHA(m.MergeSHA), s.in.Spec.Name, why)
	host := flow.Host{ID: mi.Session.Host, Timeout: mi.Session.HostTimeout}
	var res contract.RevertResult
	if err := host.Execute(ctx, flow.GitOptions("revert branch "+branch), &res, contract.ActivityPrepareRevert, contract.RevertInput{
		Clone: mi.Settings.Clone, Base: base, Commit: m.MergeSHA, Branch: branch, Subject: title, Body: body, TokenEnv: mi.Settings.Repo.TokenEnv,
	}); err != nil {
		return err
	}
	var pr contract.Pull
	if err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, "open "+branch+" of "+m.Repo), contract.ActivityOpenPull, contract.PullInput{
		Repo: mi.Settings.Repo, Head: branch, Base: base, Title: title, Body: body,
	}).Get(ctx, &pr); err != nil {
		return err
	}
	m.State, m.Revert = contract.MemberReverted, pr.URL
	s.event(ctx, fmt.Sprintf("%s: opened %s to revert pull request #%d", m.Repo, pr.URL, m.Pull))
	return nil
}
