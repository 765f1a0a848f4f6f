package webhook

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
)

// KeepDeliveries is how many of the last deliveries that had an effect a
// Handler remembers; its file is compacted when it holds twice as many.
const KeepDeliveries = 10_000

// deliveryIDRE matches a delivery ID that may be recorded: GitHub's are
// GUIDs, and nothing that could break a line of the file gets in.
var deliveryIDRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,100}$`)

// deliveries remembers the IDs of the deliveries that had an effect, in
// memory and in an append-only file of one ID a line, so that a delivery
// GitHub sends again (a redelivery, a retry) has none, across restarts
// too. It is safe for concurrent use.
type deliveries struct {
	path string
	keep int

	mu sync.Mutex
	f  *os.File
	// ring holds the last keep IDs, the oldest at next once it is full;
	// seen indexes it.
	ring []string
	next int
	seen map[string]bool
	// lines counts the IDs in the file.
	lines int
	// busy holds the IDs being handled, each with a channel closed when
	// its handling ends.
	busy map[string]chan struct{}
}

// openDeliveries opens the record at path, creating it (0600) and its
// directory (0700) when they do not exist, and remembers the last keep
// IDs it holds.
func openDeliveries(path string, keep int) (*deliveries, error) {
	if keep < 1 {
		return nil, fmt.Errorf("keep %d deliveries: must be at least 1", keep)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the directory of the webhook deliveries: %w", err)
	}
	d := &deliveries{path: path, keep: keep, seen: make(map[string]bool), busy: make(map[string]chan struct{})}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read the webhook deliveries: %w", err)
	}
	// A last line without its newline is a write that a crash cut short:
	// its delivery may be sent again, and will then be recorded whole.
	torn := len(data) > 0 && data[len(data)-1] != '\n'
	if i := bytes.LastIndexByte(data, '\n'); torn {
		data = data[:i+1]
	}
	clean := !torn
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		id := sc.Text()
		if !deliveryIDRE.MatchString(id) {
			clean = false
			continue
		}
		d.remember(id)
		d.lines++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the webhook deliveries: %w", err)
	}
	if !clean || d.lines > 2*keep {
		if err := d.compact(); err != nil {
			return nil, err
		}
		return d, nil
	}
	if err := d.openAppend(); err != nil {
		return nil, err
	}
	return d, nil
}

// openAppend opens the file to append to it.
func (d *deliveries) openAppend() error {
	f, err := os.OpenFile(d.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the webhook deliveries: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("open the webhook deliveries: %w", err)
	}
	d.f = f
	return nil
}

// remember adds id to the IDs in memory, forgetting the oldest beyond
// keep.
func (d *deliveries) remember(id string) {
	if d.seen[id] {
		return
	}
	if len(d.ring) < d.keep {
		d.ring = append(d.ring, id)
	} else {
		delete(d.seen, d.ring[d.next])
		d.ring[d.next] = id
		d.next = (d.next + 1) % d.keep
	}
	d.seen[id] = true
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
		if d.seen[id] {
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
						err = d.record(id)
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

// record remembers id and appends it to the file, compacting the file
// when it holds more than twice keep IDs. d.mu is held.
func (d *deliveries) record(id string) error {
	d.remember(id)
	if d.f == nil {
		return fmt.Errorf("record delivery %s: the record is closed", id)
	}
	if _, err := d.f.WriteString(id + "\n"); err != nil {
		return fmt.Errorf("record delivery %s: %w", id, err)
	}
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("record delivery %s: %w", id, err)
	}
	d.lines++
	if d.lines > 2*d.keep {
		return d.compact()
	}
	return nil
}

// compact replaces the file with the IDs in memory, oldest first, and
// opens it to append. d.mu is held, or d is not shared yet.
func (d *deliveries) compact() error {
	if d.f != nil {
		d.f.Close()
		d.f = nil
	}
	var b bytes.Buffer
	for i := range d.ring {
		b.WriteString(d.ring[(d.next+i)%len(d.ring)])
		b.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(filepath.Dir(d.path), filepath.Base(d.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("compact the webhook deliveries: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b.Bytes())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), d.path)
	}
	if err != nil {
		// The old file is still whole: go on appending to it.
		if oerr := d.openAppend(); oerr != nil {
			return errors.Join(fmt.Errorf("compact the webhook deliveries: %w", err), oerr)
		}
		return fmt.Errorf("compact the webhook deliveries: %w", err)
	}
	d.lines = len(d.ring)
	return d.openAppend()
}

// close closes the file; later records fail.
func (d *deliveries) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	if err != nil {
		return fmt.Errorf("close the webhook deliveries: %w", err)
	}
	return nil
}
