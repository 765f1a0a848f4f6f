package notify

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/keylog"
)

// SentFileName is the name of the record of sent messages in the state
// directory.
const SentFileName = "notify-sent.log"

// KeepSent is how many of the last messages sent the record remembers;
// its file is compacted when it holds twice as many.
const KeepSent = 10_000

// Sent is a message a channel took, as the record keeps it: what ties an
// answer to a message back to its notification.
type Sent struct {
	contract.SentMessage
	// Key is the notification's key.
	Key        string               `json:"key"`
	WorkflowID string               `json:"workflow_id"`
	RunID      string               `json:"run_id"`
	Event      contract.NotifyEvent `json:"event"`
	// Question is the checkpoint a question message asks; 0 for others.
	Question int `json:"question,omitempty"`
}

// sentRecord is the record of the messages the channels took, a
// keylog.Log whose keys are the notification's key and the target, and
// whose values are the Sent, as JSON.
type sentRecord struct{ log *keylog.Log }

// openSent opens the record at path, which remembers the last keep
// messages.
func openSent(path string, keep int) (*sentRecord, error) {
	log, err := keylog.Open(path, keep)
	if err != nil {
		return nil, fmt.Errorf("notify: open the record of sent messages: %w", err)
	}
	return &sentRecord{log: log}, nil
}

// recordKey is the record's key of the notification key sent to dest. A
// dest has no "|", so the last one splits the two again.
func recordKey(key, dest string) string { return key + "|" + dest }

// get returns the message dest took of the notification key, if the
// record has one.
func (r *sentRecord) get(key, dest string) (Sent, bool) {
	value, ok := r.log.Get(recordKey(key, dest))
	if !ok {
		return Sent{}, false
	}
	var s Sent
	if err := json.Unmarshal([]byte(value), &s); err != nil {
		// Not ours to read: the message was sent all the same.
		return Sent{SentMessage: contract.SentMessage{Channel: channelOf(dest)}, Key: key}, true
	}
	return s, true
}

// put records that dest took s, syncing the record before it returns.
func (r *sentRecord) put(dest string, s Sent) error {
	value, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("record the message sent: %w", err)
	}
	if err := r.log.Put(recordKey(s.Key, dest), string(value)); err != nil {
		return fmt.Errorf("record the message sent: %w", err)
	}
	return nil
}

// find returns the recorded message of channel in chat with the ID
// messageID, the newest if several.
func (r *sentRecord) find(channel, chat, messageID string) (Sent, bool) {
	var found Sent
	var ok bool
	for _, value := range r.log.All() {
		var s Sent
		if json.Unmarshal([]byte(value), &s) == nil && s.Channel == channel && s.Chat == chat && s.MessageID == messageID {
			found, ok = s, true
		}
	}
	return found, ok
}

func (r *sentRecord) close() error { return r.log.Close() }

// channelOf is the channel of a target's dest: telegram:<chat> is
// telegram.
func channelOf(dest string) string {
	channel, _, _ := strings.Cut(dest, ":")
	return channel
}

// FindSent returns the message channel took in chat with the ID
// messageID (contract.SentMessage), as the record keeps it: the
// notification a reply to that message answers. It finds only the last
// KeepSent messages.
func (n *Notifier) FindSent(channel, chat, messageID string) (Sent, bool) {
	if n == nil || n.sent == nil || messageID == "" {
		return Sent{}, false
	}
	return n.sent.find(channel, chat, messageID)
}
