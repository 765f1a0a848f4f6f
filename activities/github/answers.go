package github

import (
	"context"
	"slices"
	"strings"

	"github.com/durable-ralph/ralph/contract"
)

// ReadAnswer reads the answer to a checkpoint asked on an issue: the
// first comment after the question (the comment that carries in.Marker)
// by a person whose live permission is write, maintain or admin. Comments
// by others are returned as Ignored (those not in in.Ignored yet), bots
// included; what the worker wrote itself is skipped. The answer's text is
// cleaned of hidden text like an issue's and clipped at
// contract.AnswerLimit.
func (a *Activities) ReadAnswer(ctx context.Context, in contract.AnswerInput) (contract.IssueAnswer, error) {
	c, err := a.client(in.Repo)
	if err != nil {
		return contract.IssueAnswer{}, err
	}
	comments, err := c.issueComments(ctx, in.Number)
	if err != nil {
		return contract.IssueAnswer{}, err
	}
	var out contract.IssueAnswer
	perms := permissions{c: c, known: map[string]string{}}
	for _, cm := range comments {
		body := cm.GetBody()
		if !out.Asked {
			out.Asked = strings.Contains(body, in.Marker)
			continue
		}
		login := cm.GetUser().GetLogin()
		if strings.Contains(body, hiddenMarker) || (in.Self != "" && botName(login) == botName(in.Self)) {
			continue
		}
		text := strings.TrimSpace(Clean(body))
		if text == "" {
			continue
		}
		why, err := distrust(ctx, perms, cm.GetUser(), nil)
		if err != nil {
			return contract.IssueAnswer{}, err
		}
		if why != "" {
			if !slices.Contains(in.Ignored, cm.GetID()) && len(out.Ignored) < MaxIgnored {
				out.Ignored = append(out.Ignored, contract.Ignored{ID: cm.GetID(), Author: login, Kind: contract.FeedbackComment, Why: why})
			}
			continue
		}
		out.Found, out.Author, out.CommentID = true, login, cm.GetID()
		out.Body = clip(text, contract.AnswerLimit)
		return out, nil
	}
	return out, nil
}
