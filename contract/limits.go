package contract

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// What a session does at a limit (limits.on-limit).
const (
	OnLimitEnd = "end" // end the session limited
	OnLimitAsk = "ask" // ask a person to raise the limit or stop, and wait
)

// OnLimitActions are the values limits.on-limit takes.
var OnLimitActions = []string{OnLimitEnd, OnLimitAsk}

// Asks reports whether reaching the limit that gave reason asks a person
// instead of ending the session: max cost, iterations and runtime do,
// with OnLimit ask.
func (l Limits) Asks(reason Reason) bool {
	switch reason {
	case ReasonMaxCost, ReasonMaxIterations, ReasonMaxRuntime:
		return l.OnLimit == OnLimitAsk
	}
	return false
}

// LimitAnswer is what a person's answer to a limit question asks for:
// new limits, or the end of the session (Stop).
type LimitAnswer struct {
	Raise SetLimitsRequest
	Stop  bool
}

// ErrLimitAnswer is an answer to a limit question that names no limit.
var ErrLimitAnswer = errors.New(`say how far to raise it ("raise to $10", "40 iterations", "8h"), "approve" to allow as much again, or "stop"`)

// ReadLimitAnswer reads ans, an answer to the question asked when the
// limit that gave reason was reached, as limits l are:
//   - reject, or a text that starts with stop, end or no, stops;
//   - approve alone allows as much again (the limit doubled);
//   - a text names new limits: "$10" or "10 usd" the cost, "40
//     iterations" the iterations, "8h" the runtime; a bare number is the
//     limit that was reached (dollars, iterations, hours).
func ReadLimitAnswer(reason Reason, l Limits, ans Answer) (LimitAnswer, error) {
	if ans.Reject {
		return LimitAnswer{Stop: true}, nil
	}
	text := strings.ToLower(strings.TrimSpace(ans.Answer + " " + ans.Reason))
	first, _, _ := strings.Cut(text, " ")
	switch strings.Trim(first, ".,!:;*_`") {
	case "stop", "end", "no", "halt", "enough":
		return LimitAnswer{Stop: true}, nil
	}
	req, err := limitsIn(reason, text)
	if err != nil {
		return LimitAnswer{}, err
	}
	if req == (SetLimitsRequest{}) {
		if !ans.Approve {
			return LimitAnswer{}, ErrLimitAnswer
		}
		switch reason {
		case ReasonMaxCost:
			req.MaxCostUSD = 2 * l.MaxCostUSD
		case ReasonMaxIterations:
			req.MaxIterations = 2 * l.MaxIterations
		case ReasonMaxRuntime:
			req.MaxRuntime = 2 * l.MaxRuntime
		}
	}
	return LimitAnswer{Raise: req}, nil
}

// limitsIn reads the limits text names (see ReadLimitAnswer).
func limitsIn(reason Reason, text string) (SetLimitsRequest, error) {
	var req SetLimitsRequest
	fields := strings.FieldsFunc(text, func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == ';' })
	for i, f := range fields {
		next := ""
		if i+1 < len(fields) {
			next = fields[i+1]
		}
		f = strings.TrimRight(f, ".!")
		switch {
		case strings.HasPrefix(f, "$"):
			v, err := strconv.ParseFloat(strings.TrimPrefix(f, "$"), 64)
			if err != nil {
				return req, fmt.Errorf("%q is not an amount of dollars", f)
			}
			req.MaxCostUSD = v
			continue
		case f == "" || !unicode.IsDigit(rune(f[0])):
			continue
		}
		if d, err := time.ParseDuration(f); err == nil && strings.IndexFunc(f, unicode.IsLetter) >= 0 {
			req.MaxRuntime = d
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return req, fmt.Errorf("%q is not a number, an amount or a duration", f)
		}
		switch unit := strings.TrimRight(next, ".!"); {
		case strings.HasPrefix(unit, "usd") || strings.HasPrefix(unit, "dollar"):
			req.MaxCostUSD = v
		case strings.HasPrefix(unit, "iteration"):
			req.MaxIterations = int(v)
		case strings.HasPrefix(unit, "hour"):
			req.MaxRuntime = time.Duration(v * float64(time.Hour))
		case strings.HasPrefix(unit, "minute"):
			req.MaxRuntime = time.Duration(v * float64(time.Minute))
		case reason == ReasonMaxCost:
			req.MaxCostUSD = v
		case reason == ReasonMaxIterations:
			req.MaxIterations = int(v)
		case reason == ReasonMaxRuntime:
			req.MaxRuntime = time.Duration(v * float64(time.Hour))
		}
	}
	return req, nil
}
