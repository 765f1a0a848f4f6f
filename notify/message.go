package notify

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/termtext"
	"github.com/durable-ralph/ralph/internal/words"
)

// Sizes of the parts of a message, in bytes of text after redaction.
// Together, with the words around them, they fit the smallest message of
// the channels, Telegram's 4096 characters; a byte is at most one
// character, whatever the text.
const (
	maxSession = 200
	maxText    = 1000
	maxDetail  = 400
	// maxDetails bounds the details together; those beyond are counted.
	maxDetails = 1500
	maxChoices = 8
	maxChoice  = 60
	maxURL     = 500
)

// uiLinkText is the text of the link to the workflow in the Temporal UI.
const uiLinkText = "Open in the Temporal UI"

// eventTitles say what each event is, after the session's name.
var eventTitles = map[contract.NotifyEvent]string{
	contract.NotifyQuestion:    "Question",
	contract.NotifyPlan:        "Plan to approve",
	contract.NotifyEnded:       "Ended",
	contract.NotifyFailed:      "Failed",
	contract.NotifyLimit:       "Stopped at a limit",
	contract.NotifyPR:          "Pull request",
	contract.NotifyHostOffline: "Host offline",
	contract.NotifyBudget:      "Budget spent",
}

// message is a notification made ready to send: every part that comes
// from the agent or the repository redacted, made plain text and
// clipped, the links checked and made.
type message struct {
	key        string
	event      contract.NotifyEvent
	session    string
	text       string
	details    []string
	choices    []string
	question   int
	url        string
	uiURL      string
	workflowID string
	runID      string
	at         time.Time
}

// prepare makes note ready to send.
func (n *Notifier) prepare(note contract.Notification) *message {
	// What the agent wrote loses its control characters, escape
	// sequences and invisible format characters (a bidirectional
	// override would make a question read other than it is).
	clip := func(s string, max int) string { return words.Clip(termtext.String(n.redact(s)), max) }
	m := &message{
		key:        note.Key,
		event:      note.Event,
		session:    clip(note.Session, maxSession),
		text:       clip(note.Text, maxText),
		question:   note.Question,
		url:        linkURL(n.redact(note.URL)),
		uiURL:      n.workflowURL(note.WorkflowID, note.RunID),
		workflowID: note.WorkflowID,
		runID:      note.RunID,
		at:         note.At,
	}
	if m.session == "" {
		m.session = clip(note.WorkflowID, maxSession)
	}
	// Each detail costs its bullet and line break too.
	budget := maxDetails
	for i, d := range note.Details {
		d = clip(d, maxDetail)
		if len(d)+3 > budget {
			m.details = append(m.details, "… "+words.Count(len(note.Details)-i, "more line"))
			break
		}
		budget -= len(d) + 3
		m.details = append(m.details, d)
	}
	for i, c := range note.Choices {
		if i == maxChoices {
			break
		}
		m.choices = append(m.choices, clip(c, maxChoice))
	}
	return m
}

// workflowURL is the page of the workflow run in the Temporal UI, or ""
// without a UI or a workflow.
func (n *Notifier) workflowURL(workflowID, runID string) string {
	if n.settings.UIURL == "" || workflowID == "" {
		return ""
	}
	u := strings.TrimSuffix(n.settings.UIURL, "/") + "/namespaces/" + url.PathEscape(n.settings.Namespace) +
		"/workflows/" + url.PathEscape(workflowID)
	if runID != "" {
		u += "/" + url.PathEscape(runID)
	}
	return u
}

// linkURL is s if it is an absolute http or https URL short enough to
// show, else "": a link that is not one is left out rather than cut.
func linkURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(s) > maxURL {
		return ""
	}
	return u.String()
}

// title is what the event is, in words.
func title(e contract.NotifyEvent) string {
	if t, ok := eventTitles[e]; ok {
		return t
	}
	return words.Clip(string(e), 40)
}

// markup is how a channel writes text: how it escapes text, makes it
// bold and links it.
type markup struct {
	escape func(string) string
	bold   func(string) string
	link   func(url, text string) string
	// answer is the line under a question's choices that says how to
	// answer on the channel; "" for none.
	answer string
}

// render writes m in mk: the session and what happened, the details, the
// choices, and the links.
func (m *message) render(mk markup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s · %s\n", mk.bold(mk.escape(m.session)), mk.escape(title(m.event)))
	if m.text != "" {
		b.WriteString(mk.escape(m.text) + "\n")
	}
	if len(m.details) > 0 {
		b.WriteString("\n")
		for _, d := range m.details {
			b.WriteString("• " + mk.escape(d) + "\n")
		}
	}
	if len(m.choices) > 0 {
		b.WriteString("\n")
		for i, c := range m.choices {
			fmt.Fprintf(&b, "%d. %s\n", i+1, mk.escape(c))
		}
	}
	if m.question > 0 && mk.answer != "" {
		b.WriteString(mk.escape(mk.answer) + "\n")
	}
	if m.url != "" || m.uiURL != "" {
		b.WriteString("\n")
	}
	if m.url != "" {
		b.WriteString(mk.link(m.url, m.url) + "\n")
	}
	if m.uiURL != "" {
		b.WriteString(mk.link(m.uiURL, uiLinkText) + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// sentOf is the record of s, a message a channel took of m.
func (m *message) sentOf(s contract.SentMessage) Sent {
	return Sent{SentMessage: s, Key: m.key, WorkflowID: m.workflowID, RunID: m.runID, Event: m.event, Question: m.question}
}
