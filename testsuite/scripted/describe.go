package scripted

import (
	"fmt"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/internal/words"
)

// Description is a reply described for the log, part by part.
type Description []string

// Add adds a part, formatted.
func (d *Description) Add(format string, args ...any) {
	*d = append(*d, fmt.Sprintf(format, args...))
}

// Quote adds `what "s"`, s on one line and cut to n bytes, unless s is
// empty.
func (d *Description) Quote(what, s string, n int) {
	if s != "" {
		d.Add("%s %q", what, words.Clip(s, n))
	}
}

// Wait adds `what d` for a reply held or delayed by d, if it is.
func (d *Description) Wait(what string, wait time.Duration) {
	if wait > 0 {
		d.Add("%s %s", what, wait)
	}
}

// CutOff adds "then cut off" for a reply whose stream is cut off.
func (d *Description) CutOff(cut bool) {
	if cut {
		d.Add("then cut off")
	}
}

// String is the parts joined by commas; "empty text" when there are
// none.
func (d Description) String() string {
	if len(d) == 0 {
		return "empty text"
	}
	return strings.Join(d, ", ")
}
