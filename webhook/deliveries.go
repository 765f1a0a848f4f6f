package webhook

import (
	"context"
	"fmt"
	"regexp"
	"sync"

	"github.com/durable-ralph/ralph/internal/keylog"
)

// KeepDeliveries is how many of the last deliveries that had an effect a
// Handler remembers; its file is compacted when it holds twice as many.
const KeepDeliveries = 10_000

// deliveryIDRE matches a delivery ID that may be recorded: GitHub's are
// GUIDs.
var deliveryIDRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,100}$`)

// deliveries remembers the IDs of the deliveries that had an effect, in a
// keylog.Log of one ID a line, so that a delivery GitHub sends again (a
// redelivery, a retry) has none, across restarts too, and holds back a
// delivery while the same one is being handled. It is safe for
// concurrent use.
type deliveries struct {
	log *keylog.Log

	mu sync.Mutex
	// busy holds the IDs being handled, each with a channel closed when
	// its handling ends.
	busy map[string]chan struct{}
}

// openDeliveries opens the record at path, creating it (0600) and its
// directory (0700) when they do not exist, and remembers the last keep
// IDs it holds.
func openDeliveries(path string, keep int) (*deliveries, error) {
	log, err := keylog.Open(path, keep)
	if err != nil {
		return nil, fmt.Errorf("open the webhook deliveries: %w", err)
	}
	return &deliveries{log: log, busy: make(map[string]chan struct{})}, nil
}

// claim reports whether the delivery id had an effect already. When it
// did not, the caller handles it and must call done once, with effect
// true when the delivery had one, which records it. While a caller
// handles id, a claim of the same id waits for it to be done (or for ctx
// to end).
func (d *deliveries) claim(ctx context.Context, id string) (done func(effect bool) error, dup bool, err error) {
	if !deliveryIDRE.MatchString(id) {
		return nil, false, fmt.Errorf("delivery ID %q: must be letters, digits and -, at most 100", id)
	}
	for {
		d.mu.Lock()
		if _, seen := d.log.Get(id); seen {
			d.mu.Unlock()
			return nil, true, nil
		}
		wait, ok := d.busy[id]
		if !ok {
			ch := make(chan struct{})
			d.busy[id] = ch
			d.mu.Unlock()
			var once sync.Once
			return func(effect bool) error {
				var err error
				once.Do(func() {
					d.mu.Lock()
					defer d.mu.Unlock()
					if effect {
						if err = d.log.Put(id, ""); err != nil {
							err = fmt.Errorf("record delivery %s: %w", id, err)
						}
					}
					delete(d.busy, id)
					close(ch)
				})
				return err
			}, false, nil
		}
		d.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, false, fmt.Errorf("wait for the same delivery: %w", ctx.Err())
		}
	}
}

// close closes the file; later records fail.
func (d *deliveries) close() error {
	if err := d.log.Close(); err != nil {
		return fmt.Errorf("close the webhook deliveries: %w", err)
	}
	return nil
}
