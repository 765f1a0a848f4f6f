// Package redact knows the worker's secrets and removes their values from
// text before it leaves the worker: the values of the worker's
// environment variables whose names say they hold a secret (a key, token,
// secret, password, pass, auth or credential), and values given as
// secrets whatever their names (the codec key, the GitHub token).
package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
)

// minSecretLen is the shortest value treated as a secret. Shorter values
// ("1", "true", a port) would redact ordinary words and numbers, and are
// no secret worth the name.
const minSecretLen = 8

// secretWords mark a variable name as holding a secret wherever they are
// in it; secretParts only as a whole part between underscores (DB_PASS,
// BASIC_AUTH, but not BYPASS_CACHE or GIT_AUTHOR_NAME).
var (
	secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL"}
	secretParts = []string{"PASS", "AUTH"}
)

// referenceSuffixes end the names of variables that say where a secret is
// rather than hold it (RALPH_CODEC_KEY_FILE, RALPH_GITHUB_TOKEN_ENV,
// SSH_AUTH_SOCK): their values are names and paths, no secret.
var referenceSuffixes = []string{"_ENV", "_FILE", "_PATH", "_DIR", "_SOCK"}

// IsSecretName reports whether an environment variable called name holds
// a secret by its name.
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	for _, suffix := range referenceSuffixes {
		if strings.HasSuffix(up, suffix) {
			return false
		}
	}
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	for _, part := range strings.FieldsFunc(up, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if slices.Contains(secretParts, part) {
			return true
		}
	}
	return false
}

// Redactor replaces known secret values with a marker naming the variable
// they came from.
type Redactor struct {
	r *strings.Replacer
	// values holds each secret value and its forms as they appear inside
	// JSON strings, longest first; names the variable of each.
	values []string
	names  []string
}

// New returns a Redactor for the secret-looking variables of env and for
// every entry of secrets, whatever its name. Both are "NAME=value"
// entries, as os.Environ returns them; values shorter than 8 characters
// are no secret.
func New(env []string, secrets ...string) *Redactor {
	type pair struct{ value, name string }
	var pairs []pair
	seen := map[string]bool{}
	add := func(kv string, always bool) {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !(always || IsSecretName(name)) || len(strings.TrimSpace(value)) < minSecretLen {
			return
		}
		for _, form := range forms(value) {
			if !seen[form] {
				seen[form] = true
				pairs = append(pairs, pair{form, name})
			}
		}
	}
	for _, kv := range secrets {
		add(kv, true)
	}
	for _, kv := range env {
		add(kv, false)
	}
	// Longest first, so a secret that contains another is replaced whole.
	slices.SortStableFunc(pairs, func(a, b pair) int { return len(b.value) - len(a.value) })
	red := &Redactor{}
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.value, "[REDACTED:"+p.name+"]")
		red.values = append(red.values, p.value)
		red.names = append(red.names, p.name)
	}
	if len(args) > 0 {
		red.r = strings.NewReplacer(args...)
	}
	return red
}

// FromEnviron returns a Redactor for this process's environment.
func FromEnviron() *Redactor { return New(os.Environ()) }

// forms returns value and the ways it is spelled inside a JSON string, so
// a secret is found in raw stream lines as well as in decoded text.
func forms(value string) []string {
	out := []string{value}
	enc, err := json.Marshal(value)
	if err == nil {
		if quoted := string(enc[1 : len(enc)-1]); quoted != value {
			out = append(out, quoted)
		}
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if e.Encode(value) == nil {
		s := strings.TrimSpace(b.String())
		if quoted := s[1 : len(s)-1]; !slices.Contains(out, quoted) {
			out = append(out, quoted)
		}
	}
	return out
}

// Empty reports whether r knows no secret.
func (r *Redactor) Empty() bool { return r == nil || r.r == nil }

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	if r.Empty() || s == "" {
		return s
	}
	return r.r.Replace(s)
}

// Bytes returns b with every secret replaced; b itself when it holds none.
func (r *Redactor) Bytes(b []byte) []byte {
	if r.Empty() || !r.containsAny(b) {
		return b
	}
	return []byte(r.r.Replace(string(b)))
}

// Find names the variable whose secret value s holds (the longest, when
// it holds several); ok is false when it holds none.
func (r *Redactor) Find(s string) (name string, ok bool) {
	if r.Empty() {
		return "", false
	}
	for i, v := range r.values {
		if strings.Contains(s, v) {
			return r.names[i], true
		}
	}
	return "", false
}

func (r *Redactor) containsAny(b []byte) bool {
	for _, v := range r.values {
		if bytes.Contains(b, []byte(v)) {
			return true
		}
	}
	return false
}

// Error returns err with every secret removed from its message. An
// application error keeps its type and retryability; an error without a
// secret is returned as it is, so that its identity (a cancellation)
// survives.
func (r *Redactor) Error(err error) error {
	if r.Empty() || err == nil {
		return err
	}
	msg := err.Error()
	red := r.String(msg)
	if red == msg {
		return err
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return temporal.NewApplicationErrorWithOptions(red, appErr.Type(), temporal.ApplicationErrorOptions{
			NonRetryable: appErr.NonRetryable(),
		})
	}
	return errors.New(red)
}

// Value returns a copy of v with every string in it redacted: fields of
// structs, elements of slices, arrays and maps, through pointers and
// interfaces. Unexported fields are left as they are.
func (r *Redactor) Value(v any) any {
	if r.Empty() || v == nil {
		return v
	}
	rv := reflect.ValueOf(v)
	out := reflect.New(rv.Type()).Elem()
	out.Set(r.copyValue(rv))
	return out.Interface()
}

func (r *Redactor) copyValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		s := r.String(v.String())
		if s == v.String() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.SetString(s)
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(r.copyValue(v.Elem()))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(r.copyValue(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if !out.Field(i).CanSet() {
				continue
			}
			out.Field(i).Set(r.copyValue(v.Field(i)))
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			out := reflect.New(v.Type()).Elem()
			out.SetBytes(r.Bytes(v.Bytes()))
			return out
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(r.copyValue(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(r.copyValue(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			out.SetMapIndex(r.copyValue(it.Key()), r.copyValue(it.Value()))
		}
		return out
	default:
		return v
	}
}
