package contract

import (
	"errors"
	"fmt"
	"regexp"
)

// ScheduledInput is the input of a Scheduled workflow: the action of the
// Temporal Schedule ScheduleID(Name), which starts the session (Session)
// or the issue queue (Queue) under the ID it has when started by hand.
type ScheduledInput struct {
	Name string `json:"name"`
	// WorkflowID is the ID of the session or queue it starts.
	WorkflowID string `json:"workflow_id"`
	// Summary is what the Temporal UI shows of that workflow.
	Summary string `json:"summary,omitempty"`
	// Keywords are the search attributes it starts with (keyword-typed).
	Keywords []Keyword     `json:"keywords,omitempty"`
	Session  *SessionInput `json:"session,omitempty"`
	Queue    *QueueInput   `json:"queue,omitempty"`
	// Command is the starter command the schedule runs, for people.
	Command []string `json:"command,omitempty"`
}

// Keyword is a keyword-typed search attribute and its value.
type Keyword struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ScheduledResult is what became of one scheduled run.
type ScheduledResult struct {
	WorkflowID string `json:"workflow_id"`
	// Skipped says why nothing was started (the workflow ran already).
	Skipped string `json:"skipped,omitempty"`
	Reason  Reason `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Failure is how the workflow failed, if it did.
	Failure string `json:"failure,omitempty"`
}

// scheduleNameRE is what a schedule's name may hold.
var scheduleNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// ValidScheduleName checks a schedule's name: letters, digits, ".", "_"
// and "-", at most 63.
func ValidScheduleName(name string) error {
	if !scheduleNameRE.MatchString(name) {
		return fmt.Errorf("invalid schedule name %q: use letters, digits, '.', '_' and '-' (at most 63, starting with a letter or digit)", name)
	}
	return nil
}

// ScheduleID is the ID of the Temporal Schedule called name.
func ScheduleID(name string) string { return "ralph-schedule-" + name }

// ScheduledWorkflowID is the ID (before the time the schedule adds) of
// the Scheduled workflows of the schedule called name.
func ScheduledWorkflowID(name string) string { return "ralph-scheduled-" + name }

// Validate checks in before it starts anything.
func (in ScheduledInput) Validate() error {
	switch {
	case ValidScheduleName(in.Name) != nil:
		return ValidScheduleName(in.Name)
	case in.WorkflowID == "":
		return errors.New("scheduled run without a workflow ID")
	case (in.Session == nil) == (in.Queue == nil):
		return errors.New("a scheduled run starts a session or a queue: give exactly one")
	}
	return nil
}
