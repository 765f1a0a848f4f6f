package contract

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnswerFrom: a reply approves or rejects a gate in a person's
// words, and is the text of any other answer.
func TestAnswerFrom(t *testing.T) {
	verify := Checkpoint{ID: "cp-2-review", Type: CheckpointHumanVerify, Options: []string{"approve", "reject"}}
	decision := Checkpoint{ID: "cp-2", Type: CheckpointDecision, Options: []string{"postgres", "sqlite"}}
	tests := []struct {
		name string
		cp   Checkpoint
		text string
		want Answer
	}{
		{"approve", verify, "Approve", Answer{ID: "cp-2-review", Approve: true}},
		{"lgtm with words", verify, "LGTM, ship it", Answer{ID: "cp-2-review", Approve: true, Reason: "ship it"}},
		{"reject with a reason", verify, "reject: the tests are missing", Answer{ID: "cp-2-review", Reject: true, Reason: "the tests are missing"}},
		{"reject, then words", verify, "Rejected - add tests", Answer{ID: "cp-2-review", Reject: true, Reason: "add tests"}},
		{"free text to a gate", verify, "Looks fine but rename the flag", Answer{ID: "cp-2-review", Answer: "Looks fine but rename the flag"}},
		{"a decision's option", decision, "sqlite", Answer{ID: "cp-2", Answer: "sqlite"}},
		{"yes to a decision is text", decision, "yes", Answer{ID: "cp-2", Answer: "yes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.cp.AnswerFrom(tt.text))
		})
	}
}
