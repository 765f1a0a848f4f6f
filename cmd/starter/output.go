package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/spf13/pflag"
)

// outputFormat is the value of -o/--output: text for people (the
// default) or json for programs.
type outputFormat string

// Output formats.
const (
	outputText outputFormat = "text"
	outputJSON outputFormat = "json"
)

func (f *outputFormat) String() string { return string(*f) }

// Set takes the flag's value, refusing any but text and json.
func (f *outputFormat) Set(s string) error {
	switch v := outputFormat(s); v {
	case outputText, outputJSON:
		*f = v
		return nil
	}
	return fmt.Errorf("the output format is text or json, not %q", s)
}

// Type is how help names the flag's values.
func (f *outputFormat) Type() string { return "text|json" }

// add adds -o/--output to fs; json says what the json format prints.
func (f *outputFormat) add(fs *pflag.FlagSet, json string) {
	*f = outputText
	fs.VarP(f, "output", "o", "the output format: text, or json for "+json+" (its fields are in docs/operations.md)")
}

// printer writes one JSON value a line, with <, > and & as they are:
// `jq` reads it as it comes.
type printer struct {
	out io.Writer
}

// newPrinter is a printer to out.
func newPrinter(out io.Writer) printer { return printer{out: out} }

// print writes v on a line of its own, its amounts rounded (roundMoney).
func (p printer) print(v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	if _, err := p.out.Write(roundMoney(b.Bytes())); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// moneyDecimals are the decimal places of an amount in -o json: a
// millionth of a dollar, finer than any price per token.
const moneyDecimals = 6

// roundMoney rounds every number of the JSON text data that has a
// fraction to moneyDecimals places, as people write amounts (0.0375, not
// 0.037500000000000006, a sum of float64s). The only such numbers in
// what -o json prints are amounts of US dollars: costs, limits and
// prices; counts, tokens and durations are whole. Strings are left as
// they are.
func roundMoney(data []byte) []byte {
	out := make([]byte, 0, len(data))
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(data) && bytes.IndexByte([]byte("+-.eE0123456789"), data[j]) >= 0 {
				j++
			}
			num := data[i:j]
			if bytes.ContainsAny(num, ".eE") {
				if v, err := strconv.ParseFloat(string(num), 64); err == nil {
					scale := math.Pow10(moneyDecimals)
					num = strconv.AppendFloat(nil, math.Round(v*scale)/scale, 'f', -1, 64)
				}
			}
			out = append(out, num...)
			i = j - 1
			continue
		}
		out = append(out, c)
	}
	return out
}
