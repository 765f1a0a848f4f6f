package activities

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

func TestKeepAliveRepeatsTheLastProgress(t *testing.T) {
	var mu sync.Mutex
	var sent []contract.Progress
	send := func(p contract.Progress) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, p)
	}
	count := func(head string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, p := range sent {
			if p.StartHead == head {
				n++
			}
		}
		return n
	}

	k := newKeepAlive(&contract.Progress{StartHead: "dead-attempt"}, send)
	k.start(10 * time.Millisecond)
	require.Eventually(t, func() bool { return count("dead-attempt") >= 3 }, 2*time.Second, 5*time.Millisecond,
		"before this attempt's first beat, the dead attempt's progress is kept alive")

	k.beat(contract.Progress{StartHead: "this-attempt"})
	require.Eventually(t, func() bool { return count("this-attempt") >= 3 }, 2*time.Second, 5*time.Millisecond,
		"after a beat, the latest progress is repeated")
	before := count("dead-attempt")

	k.stop()
	mu.Lock()
	n := len(sent)
	mu.Unlock()
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, before, count("dead-attempt"), "the dead attempt's progress is never sent again")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, sent, n, "nothing after stop")
}

func TestKeepAliveSendsNothingWithoutProgress(t *testing.T) {
	sent := make(chan contract.Progress, 10)
	k := newKeepAlive(nil, func(p contract.Progress) { sent <- p })
	k.start(5 * time.Millisecond)
	time.Sleep(40 * time.Millisecond)
	k.stop()
	require.Empty(t, sent, "no details to repeat: nothing is sent, so no retry reads empty ones")
}
