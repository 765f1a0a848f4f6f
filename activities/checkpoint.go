package activities

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/tasks"

	"github.com/durable-ralph/ralph/contract"
)

// Bounds on what an agent may put in a checkpoint; a human reads it.
const (
	maxQuestion = 2000
	maxContext  = 4000
	maxOptions  = 10
	maxOption   = 200
)

// takeCheckpoint reads and removes the agent's checkpoint file, keeping a
// copy at keep (relative to the workspace) under the session's state dir.
// It returns nil when there is none. A file that cannot be understood is
// an error the iteration reports. The file is read only inside the
// workspace: a symlink out of it (to ~/.ssh/id_ed25519, to be shown as the
// question) is removed unread, and the question says so.
func takeCheckpoint(workspace, keep string) (*contract.CheckpointRequest, error) {
	data, err := tasks.ReadFile(workspace, contract.CheckpointFile)
	var outside *tasks.OutsideError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.As(err, &outside):
		if rerr := os.Remove(filepath.Join(workspace, contract.CheckpointFile)); rerr != nil {
			return nil, fmt.Errorf("remove %s: %w", contract.CheckpointFile, rerr)
		}
		return rawCheckpoint(nil, err), nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", contract.CheckpointFile, err)
	}
	if err := tasks.Rename(workspace, contract.CheckpointFile, keep); err != nil {
		return nil, fmt.Errorf("keep %s: %w", contract.CheckpointFile, err)
	}
	var cp contract.CheckpointRequest
	if err := json.Unmarshal(data, &cp); err != nil {
		return rawCheckpoint(data, err), nil
	}
	cp.Source = "file"
	if err := normalizeCheckpoint(&cp); err != nil {
		return rawCheckpoint(data, err), nil
	}
	return &cp, nil
}

// rawCheckpoint turns a checkpoint file that is not what the protocol asks
// for into a question anyway: the agent wanted a human, and a human can
// read what it wrote.
func rawCheckpoint(data []byte, err error) *contract.CheckpointRequest {
	return &contract.CheckpointRequest{
		Type:     contract.CheckpointDecision,
		Question: words.Cut(strings.TrimSpace(string(data)), maxQuestion),
		Context:  fmt.Sprintf("The agent's %s did not follow the checkpoint format (%v); its content is shown as the question.", contract.CheckpointFile, err),
		Source:   "file",
	}
}

// checkpointTag matches <checkpoint type="decision">question …</checkpoint>
// in the agent's final text.
var checkpointTag = regexp.MustCompile(`(?s)<checkpoint(?:\s+type\s*=\s*"([^"]*)")?\s*>(.*?)</checkpoint>`)

// tagCheckpoint finds a checkpoint tag in the agent's final text. Lines of
// the body that start with "- " are the options; the rest is the question.
func tagCheckpoint(text string) (*contract.CheckpointRequest, error) {
	m := checkpointTag.FindAllStringSubmatch(text, -1)
	if len(m) == 0 {
		return nil, nil
	}
	last := m[len(m)-1]
	cp := contract.CheckpointRequest{Type: last[1], Source: "tag"}
	var question []string
	for _, line := range strings.Split(last[2], "\n") {
		t := strings.TrimSpace(line)
		if opt, ok := strings.CutPrefix(t, "- "); ok {
			cp.Options = append(cp.Options, strings.TrimSpace(opt))
		} else if t != "" {
			question = append(question, t)
		}
	}
	cp.Question = strings.Join(question, "\n")
	if err := normalizeCheckpoint(&cp); err != nil {
		return nil, fmt.Errorf("checkpoint tag: %w", err)
	}
	return &cp, nil
}

// normalizeCheckpoint checks cp and bounds its texts.
func normalizeCheckpoint(cp *contract.CheckpointRequest) error {
	if cp.Type == "" {
		cp.Type = contract.CheckpointDecision
	}
	switch cp.Type {
	case contract.CheckpointHumanVerify, contract.CheckpointDecision, contract.CheckpointHumanAction:
	default:
		return fmt.Errorf("type %q is not one of %s, %s, %s", cp.Type, contract.CheckpointHumanVerify, contract.CheckpointDecision, contract.CheckpointHumanAction)
	}
	cp.Question = strings.TrimSpace(cp.Question)
	if cp.Question == "" {
		return errors.New("the question is empty")
	}
	cp.Question = words.Cut(cp.Question, maxQuestion)
	cp.Context = words.Cut(strings.TrimSpace(cp.Context), maxContext)
	if len(cp.Options) > maxOptions {
		cp.Options = cp.Options[:maxOptions]
	}
	for i, o := range cp.Options {
		cp.Options[i] = words.Cut(strings.TrimSpace(o), maxOption)
	}
	return nil
}
