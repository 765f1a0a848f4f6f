package flow

import "strings"

// Quote makes s a markdown quotation.
func Quote(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

// AppendBounded appends v to s and keeps the last n.
func AppendBounded[T any](s []T, v T, n int) []T {
	s = append(s, v)
	if len(s) > n {
		s = append([]T(nil), s[len(s)-n:]...)
	}
	return s
}
