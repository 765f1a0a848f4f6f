package session

import (
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// signals are the session's signal channels.
type signals struct {
	stop, pause, resume, guide, checkpoint workflow.ReceiveChannel
	// gaveUp tells of notifications not delivered.
	gaveUp workflow.ReceiveChannel
	// rewound comes with a reset: the loop takes it (rewindIfAsked).
	rewound workflow.ReceiveChannel
}

func newSignals(ctx workflow.Context) signals {
	return signals{
		stop: workflow.GetSignalChannelWithOptions(ctx, contract.SignalStop, workflow.SignalChannelOptions{
			Description: "Finish the current iteration, then end the session as stopped",
		}),
		pause: workflow.GetSignalChannelWithOptions(ctx, contract.SignalPause, workflow.SignalChannelOptions{
			Description: "Pause before the next iteration",
		}),
		resume: workflow.GetSignalChannelWithOptions(ctx, contract.SignalResume, workflow.SignalChannelOptions{
			Description: "Resume a paused session",
		}),
		guide: workflow.GetSignalChannelWithOptions(ctx, contract.SignalGuide, workflow.SignalChannelOptions{
			Description: "Text added to the next iteration's prompt (a JSON string)",
		}),
		checkpoint: workflow.GetSignalChannelWithOptions(ctx, contract.SignalCheckpoint, workflow.SignalChannelOptions{
			Description: `Answer the pending checkpoint, whose ID the status query and the workflow's details show: {"id": "<ID>", "approve": true} or {"id": "<ID>", "reject": true, "reason": "…"} or {"id": "<ID>", "answer": "…"}`,
		}),
		rewound: workflow.GetSignalChannelWithOptions(ctx, contract.SignalRewound, workflow.SignalChannelOptions{
			Description: "Sent by starter rewind with its reset of the session: put the branch back at the iteration the session was reset to",
		}),
		gaveUp: workflow.GetSignalChannelWithOptions(ctx, contract.SignalNotifyGaveUp, workflow.SignalChannelOptions{
			Description: "A notification of this session that a channel did not take before notify.max-age (sent by its Notification workflow)",
		}),
	}
}

// listen records control signals as they arrive; the loop reads the
// fields. It waits for signals without receiving them, so that they stay
// in their channels until taken: the loop takes them itself (drainSignals)
// when one arrives in the same workflow task as the result it acts on, and
// the listener only runs once the loop blocks.
func (s *session) listen(ctx workflow.Context) {
	for {
		err := workflow.Await(ctx, func() bool {
			return s.signals.stop.Len()+s.signals.pause.Len()+s.signals.resume.Len()+
				s.signals.guide.Len()+s.signals.checkpoint.Len()+s.signals.gaveUp.Len() > 0
		})
		if err != nil {
			return
		}
		s.drainSignals()
	}
}

// listenSelecting is the listener of runs recorded before drainSignals: it
// receives signals in a selector, which takes a signal out of its channel
// as soon as it is delivered, before the listener runs.
func (s *session) listenSelecting(ctx workflow.Context) {
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(s.signals.stop, func(c workflow.ReceiveChannel, _ bool) {
			var sig contract.StopSignal
			c.Receive(ctx, &sig)
			s.onStop(sig)
		})
		sel.AddReceive(s.signals.pause, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			s.st.Paused = true
		})
		sel.AddReceive(s.signals.resume, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			s.st.Paused = false
		})
		sel.AddReceive(s.signals.guide, func(c workflow.ReceiveChannel, _ bool) {
			var text string
			c.Receive(ctx, &text)
			s.onGuide(text)
		})
		sel.AddReceive(s.signals.checkpoint, func(c workflow.ReceiveChannel, _ bool) {
			var ans contract.Answer
			c.Receive(ctx, &ans)
			s.onCheckpoint(ans)
		})
		sel.Select(ctx)
		if ctx.Err() != nil {
			return
		}
	}
}

// drainSignals applies every signal that has arrived but that the
// listener has not taken yet. A signal delivered in the same workflow task
// as the result the loop acts on reaches the listener only after the loop
// blocks again; before the loop hands its state on (continue-as-new) or
// ends, it takes them itself, in the order of the listener.
func (s *session) drainSignals() {
	for {
		got := false
		var sig contract.StopSignal
		for s.signals.stop.ReceiveAsync(&sig) {
			s.onStop(sig)
			sig, got = contract.StopSignal{}, true
		}
		for s.signals.pause.ReceiveAsync(nil) {
			s.st.Paused, got = true, true
		}
		for s.signals.resume.ReceiveAsync(nil) {
			s.st.Paused, got = false, true
		}
		var text string
		for s.signals.guide.ReceiveAsync(&text) {
			s.onGuide(text)
			text, got = "", true
		}
		var ans contract.Answer
		for s.signals.checkpoint.ReceiveAsync(&ans) {
			s.onCheckpoint(ans)
			ans, got = contract.Answer{}, true
		}
		var gave contract.NotifyGaveUp
		for s.signals.gaveUp.ReceiveAsync(&gave) {
			s.status.Undelivered = append(s.status.Undelivered, gave)
			if n := len(s.status.Undelivered); n > contract.NotifyGaveUpLimit {
				s.status.Undelivered = s.status.Undelivered[n-contract.NotifyGaveUpLimit:]
			}
			gave, got = contract.NotifyGaveUp{}, true
		}
		if !got {
			return
		}
	}
}

func (s *session) onStop(sig contract.StopSignal) {
	s.stopped.SendAsync(true)
	s.stopReason = "stop requested"
	if sig.Reason != "" {
		s.stopReason = "stop requested: " + sig.Reason
	}
	s.status.StopRequested = true
}

// onGuide takes guidance for the next prompt: clipped at
// contract.MessageLimit, and at most contract.GuidanceLimit texts wait
// (the oldest dropped and counted), so that a flood of guide signals on a
// paused session can never make its next iteration's input too large.
func (s *session) onGuide(text string) {
	if text = strings.TrimSpace(text); text == "" {
		return
	}
	if len(text) > contract.MessageLimit {
		s.logger.Warn("guidance clipped", "bytes", len(text), "limit", contract.MessageLimit)
		text = words.Cut(text, contract.MessageLimit-64) + " [clipped: the guidance was longer than 16 KiB]"
	}
	s.addGuidance(text)
	if n := len(s.st.Guidance); n > contract.GuidanceLimit {
		s.st.DroppedGuidance += n - contract.GuidanceLimit
		s.st.Guidance = append([]string(nil), s.st.Guidance[n-contract.GuidanceLimit:]...)
	}
}

func (s *session) onCheckpoint(ans contract.Answer) {
	if err := ans.Validate(s.status.Pending, s.answer != nil); err != nil {
		// A signal cannot be refused; a stale or malformed one is
		// dropped and counted, never applied to another question.
		s.st.IgnoredAnswers++
		s.logger.Warn("checkpoint signal ignored", "id", ans.ID, "error", err)
		return
	}
	s.answer = &ans
}

// listenAgentSlots shows when the running iteration waits for an agent
// slot of its worker (worker.max-agents) and when it got one.
func (s *session) listenAgentSlots(ctx workflow.Context) {
	ch := workflow.GetSignalChannelWithOptions(ctx, contract.SignalAgentSlot, workflow.SignalChannelOptions{
		Description: "Sent by the worker: the running iteration waits for an agent slot, or got one",
	})
	for {
		var slot contract.AgentSlot
		if !ch.Receive(ctx, &slot) {
			return
		}
		if !s.status.Running || slot.Iteration != s.st.Iteration {
			continue // about an iteration that has ended
		}
		switch {
		case slot.Waiting && s.status.State == contract.StateRunning:
			s.setState(ctx, contract.StateWaitingForAgentSlot)
		case !slot.Waiting && s.status.State == contract.StateWaitingForAgentSlot:
			s.setState(ctx, contract.StateRunning)
		}
	}
}
