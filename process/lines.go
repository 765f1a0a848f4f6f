package process

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// readLines calls fn for every line of r without holding more than max
// bytes of one line; longer lines are reported with tooLong and dropped.
func readLines(r io.Reader, max int, fn func(line []byte, tooLong bool)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if !tooLong {
				if len(buf)+len(chunk) > max {
					tooLong = true
					buf = buf[:0]
				} else {
					buf = append(buf, chunk...)
				}
			}
		}
		switch {
		case err == nil || (errors.Is(err, io.EOF) && (len(buf) > 0 || tooLong)):
			if tooLong {
				fn(nil, true)
			} else {
				fn(trimEOL(buf), false)
			}
			buf, tooLong = buf[:0], false
			if err != nil {
				return nil
			}
		case errors.Is(err, bufio.ErrBufferFull):
			// keep reading the same line
		case errors.Is(err, io.EOF), errors.Is(err, os.ErrClosed):
			return nil
		default:
			return fmt.Errorf("read output: %w", err)
		}
		if cap(buf) > 1<<20 && len(buf) == 0 {
			buf = nil // let one huge line's buffer go
		}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
