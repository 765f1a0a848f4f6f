package fakegithub

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// hook queues a delivery of event with action, sent by sender, whose
// payload is payload with the action, the repository and the sender: if a
// webhook is set (see SetWebhook). Called with s.mu held, it fixes the
// body now, so that deliveries tell the changes as they happened, in
// order.
func (s *Server) hook(event, action, sender string, payload map[string]any) {
	if s.hookURL == "" {
		return
	}
	payload["action"] = action
	payload["repository"] = s.repoJSON(false)
	payload["sender"] = s.user(sender)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(payload); err != nil {
		panic(fmt.Sprintf("fakegithub: encoding a %s delivery: %v", event, err))
	}
	s.hooks.enqueue(&delivery{
		Delivery: Delivery{Event: event, Action: action, ID: newDeliveryID()},
		url:      s.hookURL,
		secret:   s.hookSecret,
		body:     bytes.TrimSuffix(buf.Bytes(), []byte("\n")),
	})
}

// hookIssue queues the delivery of action on the issue is by sender: an
// "issues" event, or a "pull_request" one for a pull request. label is
// the label of labeled and unlabeled.
func (s *Server) hookIssue(is *issue, action, sender, label string) {
	if s.hookURL == "" {
		return
	}
	event, payload := "issues", map[string]any{}
	if is.pull != nil {
		event = "pull_request"
		payload["number"] = is.number
		payload["pull_request"] = s.pullHookJSON(is)
	} else {
		payload["issue"] = s.issueJSON(is)
	}
	if label != "" {
		payload["label"] = s.labelJSON(s.ensureLabel(label))
	}
	s.hook(event, action, sender, payload)
}

// hookComment queues the "issue_comment" delivery of comment c, created
// on the issue (or pull request) is.
func (s *Server) hookComment(is *issue, c *comment) {
	if s.hookURL == "" {
		return
	}
	s.hook("issue_comment", "created", c.author, map[string]any{
		"issue":   s.issueJSON(is),
		"comment": s.commentJSON(c),
	})
}

// hookCreation queues the deliveries of the creation of the issue is, as
// it is now: opened by its author, then labeled for each labeled event
// and closed for a closed one, by their actors.
func (s *Server) hookCreation(is *issue) {
	s.hookIssue(is, "opened", is.author, "")
	for _, e := range is.events {
		switch e.event {
		case "labeled":
			s.hookIssue(is, "labeled", e.actor, e.label)
		case "closed":
			s.hookIssue(is, "closed", e.actor, "")
		}
	}
}

// quietly makes change without its deliveries: hookCreation tells a
// creation afterwards.
func (s *Server) quietly(change func()) {
	url := s.hookURL
	s.hookURL = ""
	defer func() { s.hookURL = url }()
	change()
}
