// Package termtext makes what another program wrote safe to show on a
// terminal: it removes the terminal's control sequences (ECMA-48: CSI
// such as clear screen and cursor moves, OSC such as the window title and
// OSC 52 clipboard writes, DCS, SOS, PM and APC strings, other escape
// sequences, 7-bit and 8-bit C1 forms alike), the other control
// characters and the invisible format characters (Unicode Cf, such as
// bidirectional overrides). Printable UTF-8, tabs and newlines are kept;
// SGR colours go too, so that nothing can ride in them.
//
// The agents' output reaches a person through it: the live view
// ([String]) and starter's raw view ([Writer]), which gets the stream in
// chunks and removes a sequence split across two of them.
package termtext

import (
	"io"
	"unicode"
	"unicode/utf8"
)

// Control characters the filter acts on.
const (
	bel = 0x07
	can = 0x18 // cancels a sequence
	sub = 0x1a // cancels a sequence
	esc = 0x1b
	del = 0x7f
	// C1 controls, as 8-bit bytes or as the runes U+0080–U+009F.
	c1DCS = 0x90
	c1SOS = 0x98
	c1CSI = 0x9b
	c1ST  = 0x9c
	c1OSC = 0x9d
	c1PM  = 0x9e
	c1APC = 0x9f
)

// invalid stands for a byte that is not UTF-8 (and not a C1 control).
const invalid rune = -1

// state is where the filter is in a control sequence.
type state uint8

const (
	ground   state = iota // text
	escape                // after ESC
	escInter              // ESC and intermediate bytes, until a final byte
	csi                   // control sequence, until a final byte
	str                   // OSC, DCS, SOS, PM or APC string, until its end
)

// Filter removes control sequences from a stream given in chunks. It
// keeps its state between chunks, so a sequence (or a UTF-8 character)
// split across two is removed (or kept) whole. The zero Filter is ready
// to use.
type Filter struct {
	st state
	// pend holds the start of a UTF-8 character the last chunk ended in.
	pend  [utf8.UTFMax]byte
	npend int
}

// Append appends the safe text of chunk p to dst and returns the result.
func (f *Filter) Append(dst, p []byte) []byte {
	if f.npend > 0 {
		p = append(append([]byte(nil), f.pend[:f.npend]...), p...)
		f.npend = 0
	}
	for i := 0; i < len(p); {
		b := p[i]
		if b < utf8.RuneSelf {
			if f.step(rune(b)) {
				dst = append(dst, b)
			}
			i++
			continue
		}
		if !utf8.FullRune(p[i:]) {
			f.npend = copy(f.pend[:], p[i:])
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			r = invalid
			if b <= c1APC {
				r = rune(b) // an 8-bit C1 control
			}
		}
		if f.step(r) {
			dst = append(dst, p[i:i+size]...)
		}
		i += size
	}
	return dst
}

// step moves the filter on by r and reports whether r is text to keep.
func (f *Filter) step(r rune) bool {
	switch f.st {
	case escape:
		return f.afterEscape(r)
	case escInter:
		return f.sequence(r, 0x20, 0x2f, 0x30)
	case csi:
		return f.sequence(r, 0x20, 0x3f, 0x40)
	case str:
		return f.inString(r)
	}
	return f.text(r)
}

// text handles r outside any sequence.
func (f *Filter) text(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return true
	case r == esc:
		f.st = escape
	case r == c1CSI:
		f.st = csi
	case r == c1OSC || r == c1DCS || r == c1SOS || r == c1PM || r == c1APC:
		f.st = str
	case r < 0x20 || (r >= del && r <= c1APC) || r == invalid:
		// Other C0 and C1 controls, DEL, and what is not UTF-8.
	case unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp):
		// Invisible: it would change what the text around it looks like.
	default:
		return true
	}
	return false
}

// afterEscape handles r after ESC.
func (f *Filter) afterEscape(r rune) bool {
	switch {
	case r == '[':
		f.st = csi
	case r == ']' || r == 'P' || r == 'X' || r == '^' || r == '_':
		f.st = str
	case r >= 0x20 && r <= 0x2f:
		f.st = escInter
	case r >= 0x30 && r <= 0x7e, r == can, r == sub:
		f.st = ground // a two-byte sequence (ESC \ is ST), or cancelled
	case r == esc:
	default:
		// ESC before a control or non-ASCII: that ends it.
		f.st = ground
		return f.text(r)
	}
	return false
}

// sequence handles r in a sequence whose bytes run from lo to hi and
// which ends at a final byte from final to 0x7e.
func (f *Filter) sequence(r, lo, hi, final rune) bool {
	switch {
	case r >= lo && r <= hi:
	case r >= final && r <= 0x7e, r == can, r == sub:
		f.st = ground
	case r == esc:
		f.st = escape
	default:
		// Not part of a sequence: it ends there.
		f.st = ground
		return f.text(r)
	}
	return false
}

// inString handles r in an OSC, DCS, SOS, PM or APC string: BEL, ST
// (ESC \ or C1 ST), CAN and SUB end it, and so does a newline, kept, so
// that a string never terminated does not hide the rest of the stream.
func (f *Filter) inString(r rune) bool {
	switch r {
	case bel, c1ST, can, sub:
		f.st = ground
	case esc:
		f.st = escape
	case '\n':
		f.st = ground
		return true
	}
	return false
}

// String returns s without its control sequences.
func String(s string) string {
	var f Filter
	return string(f.Append(nil, []byte(s)))
}

// Writer writes to another writer what a Filter lets through.
type Writer struct {
	w   io.Writer
	f   Filter
	buf []byte
}

// NewWriter returns a Writer that writes the safe text of what it is
// given to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write filters p and writes what is left; it reports all of p written
// unless w fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.buf = w.f.Append(w.buf[:0], p)
	if len(w.buf) == 0 {
		return len(p), nil
	}
	if _, err := w.w.Write(w.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}
