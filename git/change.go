package git

import (
	"context"
	"strings"
)

// Change is what the commits from..to changed, as a person reads it:
// the files with their counts, then the patch, cut at a line once it
// would pass max bytes (truncated says so). Binary files are named, not
// shown.
func (r *Repo) Change(ctx context.Context, from, to string, max int) (change string, truncated bool, err error) {
	out, err := r.git(ctx, "diff", "--stat=100", "--patch", "--no-ext-diff", "--no-textconv", "--no-color", from, to)
	if err != nil || len(out) <= max {
		return out, false, err
	}
	out = out[:max]
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[:i+1]
	}
	return out, true, nil
}
