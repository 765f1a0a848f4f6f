package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// fieldError is an invalid value of one setting.
type fieldError struct {
	spec   *spec
	value  any
	reason string
}

func (e *fieldError) Error() string {
	return fmt.Sprintf("invalid %s (--%s, %s) = %s: %s",
		e.spec.key, e.spec.flag, e.spec.env(), formatValue(e.value), e.reason)
}

// formatValue formats a setting's value for an error message: strings are
// quoted so that an empty or blank value shows.
func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case time.Duration:
		return shortDuration(v)
	case []string:
		return strconv.Quote(strings.Join(v, " "))
	case []int64:
		return strconv.Quote(strings.Trim(fmt.Sprint(v), "[]"))
	default:
		return fmt.Sprint(v)
	}
}

// reasonError is a decoding failure that says itself what is wrong.
type reasonError string

func (e reasonError) Error() string { return string(e) }

var (
	durationType = reflect.TypeFor[time.Duration]()
	stringsType  = reflect.TypeFor[[]string]()
	int64sType   = reflect.TypeFor[[]int64]()
)

// decodeHook converts the values viper collects from flags, environment and
// the config file (strings, YAML numbers, lists) into Config's field types.
// It replaces viper's default hook, which would split strings on commas and
// read a unitless number as nanoseconds.
var decodeHook mapstructure.DecodeHookFuncType = func(from, to reflect.Type, data any) (any, error) {
	switch {
	case to == durationType:
		return toDuration(data)
	case to == stringsType && from.Kind() == reflect.String:
		return splitCommandLine(data.(string))
	case to == int64sType:
		return toInt64s(data)
	case to.Kind() == reflect.Int:
		return toInt(data)
	}
	return data, nil
}

// toDuration converts a string such as "30m" to a time.Duration. A number
// must be 0: "1800" has no unit, and nanoseconds are surely not meant.
func toDuration(data any) (any, error) {
	switch d := data.(type) {
	case time.Duration:
		return d, nil
	case string:
		d = strings.TrimSpace(d)
		if n, err := strconv.ParseFloat(d, 64); err == nil && n != 0 && !math.IsNaN(n) && !math.IsInf(n, 0) {
			return nil, reasonError(fmt.Sprintf("needs a unit, such as %ss or %sm", d, d))
		}
		dur, err := time.ParseDuration(d)
		if err != nil {
			return nil, reasonError(kindDuration.want())
		}
		return dur, nil
	}
	rv := reflect.ValueOf(data)
	switch {
	case rv.CanInt() && rv.Int() == 0, rv.CanUint() && rv.Uint() == 0, rv.CanFloat() && rv.Float() == 0:
		return time.Duration(0), nil
	case rv.CanInt(), rv.CanUint(), rv.CanFloat():
		return nil, reasonError(fmt.Sprintf("needs a unit, such as %vs or %vm", data, data))
	}
	return nil, reasonError(kindDuration.want())
}

// toInt converts whole numbers to int and leaves other values to the
// decoder. Unlike the decoder, it rejects fractions instead of truncating
// them and reads strings as decimal only ("07233" is 7233, not octal).
func toInt(data any) (any, error) {
	switch d := data.(type) {
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(d))
		if err != nil {
			return nil, reasonError(kindInt.want())
		}
		return n, nil
	case bool:
		return nil, reasonError(kindInt.want())
	case float32, float64:
		f := reflect.ValueOf(d).Float()
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, reasonError(kindInt.want())
		}
		return int(f), nil
	}
	return data, nil
}

// toInt64s converts a list of whole numbers to []int64: a string of
// numbers separated by spaces or commas (a variable), a list of strings
// (a repeated flag) or a list of numbers (a file).
func toInt64s(data any) (any, error) {
	var items []any
	switch d := data.(type) {
	case []int64:
		return d, nil
	case string:
		for _, f := range strings.FieldsFunc(d, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			items = append(items, f)
		}
	case []string:
		for _, s := range d {
			v, err := toInt64s(s)
			if err != nil {
				return nil, err
			}
			for _, n := range v.([]int64) {
				items = append(items, n)
			}
		}
	case []any:
		items = d
	default:
		return nil, reasonError(kindInt64s.want())
	}
	nums := make([]int64, 0, len(items))
	for _, item := range items {
		n, err := toInt64(item)
		if err != nil {
			return nil, err
		}
		nums = append(nums, n)
	}
	return nums, nil
}

// toInt64 converts one whole number, written in decimal or a YAML
// number, to int64.
func toInt64(item any) (int64, error) {
	bad := reasonError(fmt.Sprintf("%s: %v is not one", kindInt64s.want(), item))
	switch v := item.(type) {
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, bad
		}
		return n, nil
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case uint64:
		if v > math.MaxInt64 {
			return 0, bad
		}
		return int64(v), nil
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			return 0, bad
		}
		return int64(v), nil
	}
	return 0, bad
}

// splitCommandLine splits s into words at unquoted white space. Within
// single quotes every character is literal; within double quotes a
// backslash escapes " and \; elsewhere a backslash escapes any character.
// Quotes group words and are removed: `claude -p 'fix it'` is
// ["claude", "-p", "fix it"].
func splitCommandLine(s string) ([]string, error) {
	words := []string{}
	var (
		word    strings.Builder
		inWord  bool
		quote   rune // ' or " while inside quotes
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			if quote == '"' && r != '"' && r != '\\' {
				word.WriteRune('\\')
			}
			word.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	switch {
	case quote != 0:
		return nil, reasonError(fmt.Sprintf("has an unterminated %c quote", quote))
	case escaped:
		return nil, reasonError("ends in a backslash")
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// decodeError turns the error of v.Unmarshal into one error per bad key,
// naming its flag and environment variable, instead of mapstructure's dump.
func decodeError(v *viper.Viper, err error) error {
	var leaves []*mapstructure.DecodeError
	collectDecodeErrors(err, &leaves)
	if len(leaves) == 0 {
		return fmt.Errorf("decode configuration: %w", err)
	}

	var errs []*fieldError
	var other []error
	for _, leaf := range leaves {
		key := leaf.Name()
		if i := strings.IndexByte(key, '['); i >= 0 {
			key = key[:i] // agent.args[2] is agent.args
		}
		s, ok := specByKey[key]
		if !ok {
			other = append(other, fmt.Errorf("invalid %s: %w", leaf.Name(), leaf.Unwrap()))
			continue
		}
		if slices.ContainsFunc(errs, func(e *fieldError) bool { return e.spec == s }) {
			continue
		}
		reason := s.kind.want()
		var re reasonError
		if errors.As(leaf, &re) {
			reason = string(re)
		}
		errs = append(errs, &fieldError{spec: s, value: v.Get(key), reason: reason})
	}
	slices.SortFunc(errs, func(a, b *fieldError) int {
		return a.spec.index() - b.spec.index()
	})
	joined := make([]error, 0, len(errs)+len(other))
	for _, e := range errs {
		joined = append(joined, e)
	}
	return errors.Join(append(joined, other...)...)
}

// collectDecodeErrors appends the decode errors in err's tree to leaves.
func collectDecodeErrors(err error, leaves *[]*mapstructure.DecodeError) {
	switch e := err.(type) {
	case *mapstructure.DecodeError:
		*leaves = append(*leaves, e)
	case interface{ Unwrap() []error }:
		for _, err := range e.Unwrap() {
			collectDecodeErrors(err, leaves)
		}
	case interface{ Unwrap() error }:
		collectDecodeErrors(e.Unwrap(), leaves)
	}
}
