package activities

import (
	"io"
	"os"

	"github.com/durable-ralph/ralph/contract"
)

// SkipLogPrompt moves f, an attempt's log, past its prompt record
// (contract.LogPromptType) to the agent's own stream; to its start when
// it has none.
func SkipLogPrompt(f *os.File) {
	var n int64
	if _, err := f.Seek(0, io.SeekStart); err == nil {
		_, n, _ = contract.ReadLogPrompt(f)
	}
	_, _ = f.Seek(n, io.SeekStart)
}
