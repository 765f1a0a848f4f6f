package fakechat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// params are the parameters of one API call, from its query string and its
// body: a JSON object, a URL-encoded form or a multipart form (files are
// read as text). A JSON value that is not a string is kept as its JSON
// text, which is what a form field holding an object carries; a JSON null
// is left out.
type params map[string]string

// parseParams reads the parameters of r, whose body is body.
func parseParams(r *http.Request, body []byte) (params, error) {
	p := params{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return p, nil
	}
	mediaType, mp, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mediaType {
	case "application/json":
		return p, p.addJSON(body)
	case "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("parsing the form: %w", err)
		}
		for k, v := range form {
			p[k] = v[0]
		}
		return p, nil
	case "multipart/form-data":
		return p, p.addMultipart(body, mp["boundary"])
	}
	return p, nil
}

// addJSON adds the members of the JSON object body.
func (p params) addJSON(body []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return fmt.Errorf("parsing the JSON object: %w", err)
	}
	for k, raw := range obj {
		raw = bytes.TrimSpace(raw)
		switch {
		case string(raw) == "null":
		case raw[0] == '"' && !utf8.Valid(raw):
			// Kept as it came, for the method to refuse: decoding would
			// hide the bad bytes behind U+FFFD.
			p[k] = string(raw[1 : len(raw)-1])
		case raw[0] == '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return fmt.Errorf("parsing %s: %w", k, err)
			}
			p[k] = s
		default:
			p[k] = string(raw)
		}
	}
	return nil
}

// addMultipart adds the parts of a multipart body.
func (p params) addMultipart(body []byte, boundary string) error {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the multipart form: %w", err)
		}
		v, err := io.ReadAll(part)
		if err != nil {
			return fmt.Errorf("reading part %s: %w", part.FormName(), err)
		}
		p[part.FormName()] = string(v)
	}
}

// has tells whether the call gave the parameter name.
func (p params) has(name string) bool {
	_, ok := p[name]
	return ok
}

// int reads an integer parameter; a missing one is def.
func (p params) int(name string, def int64) (int64, error) {
	s, ok := p[name]
	if !ok || s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parameter %s is not an integer: %w", name, err)
	}
	return n, nil
}

// bool reads a boolean parameter, false when missing.
func (p params) bool(name string) bool {
	b, _ := strconv.ParseBool(strings.TrimSpace(p[name]))
	return b
}

// json decodes a parameter holding JSON into v; a missing one leaves v
// alone and returns false.
func (p params) json(name string, v any) (bool, error) {
	s, ok := p[name]
	if !ok || s == "" {
		return false, nil
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return true, fmt.Errorf("parameter %s: %w", name, err)
	}
	return true, nil
}

// marshal encodes v as JSON without escaping HTML, as the real services do.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fakechat: encoding an answer: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
