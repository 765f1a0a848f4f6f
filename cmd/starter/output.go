package main

import (
	"encoding/json"
	"fmt"
	"io"

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
	fs.VarP(f, "output", "o", "the output format: text, or json for "+json+" (its fields are in the README)")
}

// printer writes one JSON value a line, with <, > and & as they are:
// `jq` reads it as it comes.
type printer struct {
	enc *json.Encoder
}

// newPrinter is a printer to out.
func newPrinter(out io.Writer) printer {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return printer{enc: enc}
}

// print writes v on a line of its own.
func (p printer) print(v any) error {
	if err := p.enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
