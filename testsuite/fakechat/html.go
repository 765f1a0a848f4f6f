package fakechat

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// htmlTags are the tags the Bot API's HTML style knows, with the entity
// each makes.
var htmlTags = map[string]string{
	"b": "bold", "strong": "bold",
	"i": "italic", "em": "italic",
	"u": "underline", "ins": "underline",
	"s": "strikethrough", "strike": "strikethrough", "del": "strikethrough",
	"tg-spoiler": "spoiler", "span": "spoiler",
	"code": "code", "pre": "pre",
	"a":          "text_link",
	"tg-emoji":   "custom_emoji",
	"blockquote": "blockquote",
}

// htmlParser is the state of parseHTML.
type htmlParser struct {
	s     string
	out   textBuilder
	stack []openEntity
	ents  []Entity
}

// parseHTML parses the Bot API's HTML style: only its tags, balanced;
// the entities &lt; &gt; &amp; &quot; and numeric ones decoded, any other
// "&" kept as it is (as the real parser does).
func parseHTML(s string) (string, []Entity, error) {
	p := &htmlParser{s: s}
	for i := 0; i < len(s); {
		var err error
		switch {
		case s[i] == '&':
			decoded, n := htmlEntity(s[i:])
			if n == 0 {
				decoded, n = "&", 1
			}
			p.out.add(decoded)
			i += n
		case s[i] != '<':
			_, size := utf8.DecodeRuneInString(s[i:])
			p.out.add(s[i : i+size])
			i += size
		case byteAt(s, i+1) == '/':
			i, err = p.endTag(i)
		default:
			i, err = p.startTag(i)
		}
		if err != nil {
			return "", nil, err
		}
	}
	if len(p.stack) > 0 {
		return "", nil, entityError("Can't find end tag corresponding to start tag \"%s\"", p.stack[len(p.stack)-1].tag)
	}
	return p.out.String(), p.ents, nil
}

// htmlEntity decodes the character reference at the start of s and
// returns it and its length in s, or n == 0 if there is none.
func htmlEntity(s string) (decoded string, n int) {
	end := strings.IndexByte(s, ';')
	if end < 2 || end > 10 {
		return "", 0
	}
	switch name := s[1:end]; {
	case name == "lt":
		return "<", end + 1
	case name == "gt":
		return ">", end + 1
	case name == "amp":
		return "&", end + 1
	case name == "quot":
		return "\"", end + 1
	case name[0] == '#':
		var code uint64
		var err error
		if hex, ok := strings.CutPrefix(strings.ToLower(name[1:]), "x"); ok {
			code, err = strconv.ParseUint(hex, 16, 32)
		} else {
			code, err = strconv.ParseUint(name[1:], 10, 32)
		}
		if err != nil || code == 0 || !utf8.ValidRune(rune(code)) {
			return "", 0
		}
		return string(rune(code)), end + 1
	}
	return "", 0
}

// startTag reads the start tag at s[i] and returns the index after it.
func (p *htmlParser) startTag(i int) (int, error) {
	s := p.s
	j := i + 1
	for j < len(s) && !isSpaceByte(s[j]) && s[j] != '>' {
		j++
	}
	if j >= len(s) {
		return 0, entityError("Unclosed start tag at byte offset %d", i)
	}
	name := strings.ToLower(s[i+1 : j])
	typ, ok := htmlTags[name]
	if !ok {
		return 0, entityError("Unsupported start tag \"%s\" at byte offset %d", name, i)
	}
	attrs, j, err := p.attributes(j, name, i)
	if err != nil {
		return 0, err
	}
	o := openEntity{typ: typ, tag: name, start: p.out.u16, from: p.out.Len(), at: i}
	switch name {
	case "a":
		o.arg = attrs["href"]
	case "code":
		o.arg, _ = strings.CutPrefix(attrs["class"], "language-")
	case "span":
		if attrs["class"] != "tg-spoiler" {
			return 0, entityError("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", i)
		}
	case "tg-emoji":
		o.arg = attrs["emoji-id"]
	case "blockquote":
		if _, ok := attrs["expandable"]; ok {
			o.typ = "expandable_blockquote"
		}
	}
	p.stack = append(p.stack, o)
	return j + 1, nil
}

// attributes reads the attributes of the tag name opened at byte offset
// begin, from s[j] to its '>', and returns them and the index of the '>'.
func (p *htmlParser) attributes(j int, name string, begin int) (map[string]string, int, error) {
	s := p.s
	attrs := map[string]string{}
	unclosed := entityError("Unclosed start tag at byte offset %d", begin)
	for {
		j = skipSpaces(s, j)
		if j >= len(s) {
			return nil, 0, unclosed
		}
		if s[j] == '>' {
			return attrs, j, nil
		}
		k := j
		for k < len(s) && !isSpaceByte(s[k]) && strings.IndexByte("=>/\"'", s[k]) < 0 {
			k++
		}
		if k == j {
			return nil, 0, entityError("Empty attribute name in the tag \"%s\" at byte offset %d", name, begin)
		}
		attr := strings.ToLower(s[j:k])
		if j = skipSpaces(s, k); byteAt(s, j) != '=' {
			attrs[attr] = ""
			continue
		}
		if j = skipSpaces(s, j+1); j >= len(s) {
			return nil, 0, unclosed
		}
		value, next, err := attributeValue(s, j)
		if err != nil {
			return nil, 0, err
		}
		attrs[attr], j = value, next
	}
}

// attributeValue reads the quoted or bare value at s[j] and returns it and
// the index after it.
func attributeValue(s string, j int) (string, int, error) {
	if q := s[j]; q == '"' || q == '\'' {
		var v strings.Builder
		for j++; j < len(s) && s[j] != q; {
			if decoded, n := htmlEntity(s[j:]); n > 0 {
				v.WriteString(decoded)
				j += n
				continue
			}
			v.WriteByte(s[j])
			j++
		}
		if j < len(s) {
			j++
		}
		return v.String(), j, nil
	}
	k := j
	for k < len(s) && (isAlnumByte(s[k]) || s[k] == '.' || s[k] == '-') {
		k++
	}
	if c := byteAt(s, k); !isSpaceByte(c) && c != '>' {
		return "", 0, entityError("Unexpected end of name token at byte offset %d", j)
	}
	return strings.ToLower(s[j:k]), k, nil
}

// endTag reads the end tag at s[i], closes its entity and returns the index
// after it.
func (p *htmlParser) endTag(i int) (int, error) {
	s := p.s
	if len(p.stack) == 0 {
		return 0, entityError("Unexpected end tag at byte offset %d", i)
	}
	j := i + 2
	for j < len(s) && !isSpaceByte(s[j]) && s[j] != '>' {
		j++
	}
	name := strings.ToLower(s[i+2 : j])
	if j = skipSpaces(s, j); byteAt(s, j) != '>' {
		return 0, entityError("Unclosed end tag at byte offset %d", i)
	}
	top := p.stack[len(p.stack)-1]
	if name != "" && name != top.tag {
		return 0, entityError("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", i, top.tag, name)
	}
	p.stack = p.stack[:len(p.stack)-1]
	switch top.typ {
	case "code":
		if n := len(p.stack); n > 0 && p.stack[n-1].typ == "pre" {
			// <pre><code class="language-x"> is one pre entity.
			if p.stack[n-1].arg == "" {
				p.stack[n-1].arg = top.arg
			}
			return j + 1, nil
		}
		top.arg = ""
	case "text_link":
		if top.arg == "" {
			top.arg = p.out.String()[top.from:]
		}
	case "custom_emoji":
		if _, err := strconv.ParseInt(top.arg, 10, 64); err != nil {
			return 0, entityError("Invalid custom emoji identifier specified")
		}
	}
	if e, ok := top.close(p.out.u16); ok {
		p.ents = append(p.ents, e)
	}
	return j + 1, nil
}

// skipSpaces returns the index of the first byte at or after j that is
// not white space.
func skipSpaces(s string, j int) int {
	for j < len(s) && isSpaceByte(s[j]) {
		j++
	}
	return j
}

func isAlnumByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
