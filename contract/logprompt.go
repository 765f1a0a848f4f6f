package contract

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// LogPromptType is the type of the first record of an attempt's log
// under .ralph/logs: the prompt its agent was given, ahead of the agent's
// own stream (the worker writes it, starter log reads it). One file an
// attempt, not a prompt file beside its log: a file less to create each
// iteration. Logs written before have iteration-N.prompt.md (or
// .attempt-K.prompt.md) beside them instead.
const LogPromptType = "ralph_prompt"

// logPrompt is the record of LogPromptType.
type logPrompt struct {
	Type   string `json:"type"`
	Prompt string `json:"prompt"`
}

// maxLogPrompt bounds the first line ReadLogPrompt reads: the log is the
// agent's to write.
const maxLogPrompt = 16 << 20

// LogPromptLine is the first line of an attempt's log for prompt.
func LogPromptLine(prompt string) []byte {
	data, err := json.Marshal(logPrompt{Type: LogPromptType, Prompt: prompt})
	if err != nil {
		return nil // a string always marshals
	}
	return append(data, '\n')
}

// ReadLogPrompt reads the first line of an attempt's log from r. When it
// is the prompt record, it returns the prompt, the line's length and
// true; otherwise false (a log written before the prompt was kept in it,
// or one the agent rewrote).
func ReadLogPrompt(r io.Reader) (prompt string, n int64, ok bool) {
	line, err := bufio.NewReader(io.LimitReader(r, maxLogPrompt)).ReadBytes('\n')
	if err != nil || !bytes.HasPrefix(line, []byte(`{"type":"`+LogPromptType+`"`)) {
		return "", 0, false
	}
	var rec logPrompt
	if json.Unmarshal(line, &rec) != nil || rec.Type != LogPromptType {
		return "", 0, false
	}
	return rec.Prompt, int64(len(line)), true
}
