package fakechat

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxText is the most characters (Unicode code points) a Telegram message
// may hold once its entities are parsed.
const MaxText = 4096

// Entity is a Telegram MessageEntity: a span of a message's text, in UTF-16
// code units, with its formatting.
type Entity struct {
	Type          string `json:"type"`
	Offset        int    `json:"offset"`
	Length        int    `json:"length"`
	URL           string `json:"url,omitempty"`
	Language      string `json:"language,omitempty"`
	CustomEmojiID string `json:"custom_emoji_id,omitempty"`
}

// errEntities is the Bot API's class of errors for text it cannot parse.
var errEntities = errors.New("can't parse entities")

// entityError is a parse error with the message the Bot API gives it.
func entityError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errEntities, fmt.Sprintf(format, args...))
}

// formatText parses text under parseMode as the Bot API does for
// sendMessage and editMessageText: it returns the text a person sees, its
// entities, and the description of a 400 answer (without "Bad Request: ")
// when the API would refuse it.
func formatText(text, parseMode string) (string, []Entity, error) {
	if !utf8.ValidString(text) {
		return "", nil, errors.New("strings must be encoded in UTF-8")
	}
	var (
		plain    string
		entities []Entity
		err      error
	)
	switch strings.ToLower(parseMode) {
	case "":
		plain = text
	case "html":
		plain, entities, err = parseHTML(text)
	case "markdownv2":
		plain, entities, err = parseMarkdownV2(text)
	case "markdown":
		plain, entities, err = parseMarkdown(text)
	default:
		return "", nil, errors.New("unsupported parse_mode")
	}
	if err != nil {
		return "", nil, err
	}
	plain, entities = trimText(plain, entities)
	switch {
	case plain == "":
		return "", nil, errors.New("message text is empty")
	case utf8.RuneCountInString(plain) > MaxText:
		return "", nil, errors.New("message is too long")
	}
	return plain, entities, nil
}

// trimText strips the white space around text, as the Bot API does, and
// moves and clips the entities to match.
func trimText(text string, entities []Entity) (string, []Entity) {
	body := strings.TrimLeftFunc(text, unicode.IsSpace)
	shift := utf16Len(text[:len(text)-len(body)])
	body = strings.TrimRightFunc(body, unicode.IsSpace)
	end := utf16Len(body)
	out := entities[:0]
	for _, e := range entities {
		start, stop := max(e.Offset-shift, 0), min(e.Offset+e.Length-shift, end)
		if stop > start {
			e.Offset, e.Length = start, stop-start
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b Entity) int {
		if a.Offset != b.Offset {
			return a.Offset - b.Offset
		}
		return b.Length - a.Length
	})
	return body, out
}

// utf16Len is the length of s in UTF-16 code units, the unit of entities.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// textBuilder accumulates parsed text and counts it in UTF-16 code units.
type textBuilder struct {
	strings.Builder
	u16 int
}

func (b *textBuilder) add(s string) {
	b.WriteString(s)
	b.u16 += utf16Len(s)
}

// byteAt is s[i], or 0 past the end, as the Bot API's parser reads it.
func byteAt(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// openEntity is an entity whose end the parser has not met yet.
type openEntity struct {
	typ, tag, arg string
	start         int // in UTF-16 code units of the output
	from          int // in bytes of the output
	at            int // byte offset of its opening in the input
}

// close makes the entity of o, ending at end, or nothing if it is empty.
func (o openEntity) close(end int) (Entity, bool) {
	e := Entity{Type: o.typ, Offset: o.start, Length: end - o.start}
	switch o.typ {
	case "text_link":
		e.URL = o.arg
	case "pre":
		e.Language = o.arg
	case "custom_emoji":
		e.CustomEmojiID = o.arg
	}
	return e, e.Length > 0
}

// markdownV2Types names entity types the way the Bot API's MarkdownV2
// errors do.
var markdownV2Types = map[string]string{
	"bold": "Bold", "italic": "Italic", "underline": "Underline",
	"strikethrough": "Strikethrough", "spoiler": "Spoiler", "code": "Code",
	"pre": "Pre", "text_link": "TextUrl", "custom_emoji": "CustomEmoji",
}

// reservedV2 are the characters MarkdownV2 reserves outside code.
const reservedV2 = "_*[]()~`>#+-=|{}.!"

// v2Parser is the state of parseMarkdownV2.
type v2Parser struct {
	s     string
	out   textBuilder
	stack []openEntity
	ents  []Entity
	quote int // where the open block quote starts, in UTF-16 code units; -1 for none
}

// parseMarkdownV2 parses Telegram's MarkdownV2: every reserved character
// not part of an entity's markup must be escaped with a backslash, and
// every entity must end.
func parseMarkdownV2(s string) (string, []Entity, error) {
	p := &v2Parser{s: s, quote: -1}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if next := byteAt(s, i+1); c == '\\' && next > 0 && next <= 126 {
			i++
			p.out.add(s[i : i+1])
			continue
		}
		reserved := reservedV2
		var top *openEntity
		if len(p.stack) > 0 {
			top = &p.stack[len(p.stack)-1]
			if top.typ == "code" || top.typ == "pre" {
				reserved = "`"
			}
		}
		switch {
		case !strings.ContainsRune(reserved, rune(c)):
			_, size := utf8.DecodeRuneInString(s[i:])
			p.out.add(s[i : i+size])
			i += size - 1
			if c == '\n' {
				p.endQuote(i+1, 1)
			}
		case c == '>' && (i == 0 || s[i-1] == '\n'):
			if p.quote < 0 {
				p.quote = p.out.u16
			}
		case top != nil && endsV2(top.typ, s, i):
			var err error
			if i, err = closeV2(s, i, &p.out, top); err != nil {
				return "", nil, err
			}
			if e, ok := top.close(p.out.u16); ok {
				p.ents = append(p.ents, e)
			}
			p.stack = p.stack[:len(p.stack)-1]
		default:
			o, last, err := openV2(s, i)
			if err != nil {
				return "", nil, err
			}
			o.start, o.from, i = p.out.u16, p.out.Len(), last
			p.stack = append(p.stack, o)
		}
	}
	if len(p.stack) > 0 {
		top := p.stack[len(p.stack)-1]
		return "", nil, entityError("Can't find end of %s entity at byte offset %d", markdownV2Types[top.typ], top.at)
	}
	p.endQuote(len(s), 0)
	return p.out.String(), p.ents, nil
}

// endQuote ends the open block quote, but for the line break of back
// UTF-16 code units that ended it, unless the line at s[next] goes on with
// it.
func (p *v2Parser) endQuote(next, back int) {
	if p.quote < 0 || byteAt(p.s, next) == '>' {
		return
	}
	if e, ok := (openEntity{typ: "blockquote", start: p.quote}).close(p.out.u16 - back); ok {
		p.ents = append(p.ents, e)
	}
	p.quote = -1
}

// endsV2 tells whether the reserved character at s[i] ends an open entity
// of type typ.
func endsV2(typ string, s string, i int) bool {
	c, next := s[i], byteAt(s, i+1)
	switch typ {
	case "bold":
		return c == '*'
	case "italic":
		return c == '_' && next != '_'
	case "underline":
		return c == '_' && next == '_'
	case "strikethrough":
		return c == '~'
	case "spoiler":
		return c == '|' && next == '|'
	case "code":
		return c == '`'
	case "pre":
		return c == '`' && next == '`' && byteAt(s, i+2) == '`'
	case "text_link", "custom_emoji":
		return c == ']'
	}
	return false
}

// openV2 reads the opening of an entity at s[i] and returns it (without its
// start) and the index of its last byte of markup.
func openV2(s string, i int) (openEntity, int, error) {
	c, next := s[i], byteAt(s, i+1)
	o := openEntity{at: i}
	switch {
	case c == '_' && next == '_':
		o.typ, i = "underline", i+1
	case c == '_':
		o.typ = "italic"
	case c == '*':
		o.typ = "bold"
	case c == '~':
		o.typ = "strikethrough"
	case c == '|' && next == '|':
		o.typ, i = "spoiler", i+1
	case c == '[':
		o.typ = "text_link"
	case c == '!' && next == '[':
		o.typ, i = "custom_emoji", i+1
	case c == '`' && next == '`' && byteAt(s, i+2) == '`':
		o.typ, i = "pre", i+3
		lang := i
		for lang < len(s) && !isSpaceByte(s[lang]) && s[lang] != '`' {
			lang++
		}
		if lang > i && lang < len(s) && s[lang] != '`' {
			o.arg, i = s[i:lang], lang
		}
		if c := byteAt(s, i); c == '\n' || c == '\r' {
			i++
			if d := byteAt(s, i); (d == '\n' || d == '\r') && d != c {
				i++
			}
		}
		i--
	case c == '`':
		o.typ = "code"
	default:
		return o, 0, entityError("Character '%c' is reserved and must be escaped with the preceding '\\'", c)
	}
	return o, i, nil
}

// closeV2 reads the end of the open entity top at s[i] (and a link's URL)
// and returns the index of its last byte of markup.
func closeV2(s string, i int, out *textBuilder, top *openEntity) (int, error) {
	switch top.typ {
	case "underline", "spoiler":
		return i + 1, nil
	case "pre":
		return i + 2, nil
	case "text_link", "custom_emoji":
		if byteAt(s, i+1) != '(' {
			if top.typ == "custom_emoji" {
				return 0, entityError("Custom emoji entity must contain a tg://emoji URL")
			}
			top.arg = out.String()[top.from:]
			return i, nil
		}
		i += 2
		begin := i
		var u strings.Builder
		for ; i < len(s) && s[i] != ')'; i++ {
			if next := byteAt(s, i+1); s[i] == '\\' && next > 0 && next <= 126 {
				i++
			}
			u.WriteByte(s[i])
		}
		if i >= len(s) {
			return 0, entityError("Can't find end of a URL at byte offset %d", begin)
		}
		top.arg = u.String()
		if top.typ == "custom_emoji" {
			id, ok := strings.CutPrefix(top.arg, "tg://emoji?id=")
			if _, err := strconv.ParseInt(id, 10, 64); !ok || err != nil {
				return 0, entityError("Custom emoji URL must have an emoji identifier")
			}
			top.arg = id
		}
	}
	return i, nil
}

// isSpaceByte is the Bot API parser's notion of white space.
func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}

// markdownTypes are the entities of legacy Markdown by their opening.
var markdownTypes = map[byte]string{'_': "italic", '*': "bold", '`': "code", '[': "text_link"}

// parseMarkdown parses Telegram's legacy Markdown: *bold*, _italic_,
// `code`, ```pre``` and [text](url), each of which must end; nothing else
// is reserved.
func parseMarkdown(s string) (string, []Entity, error) {
	var (
		out  textBuilder
		ents []Entity
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && strings.IndexByte("_*`[", byteAt(s, i+1)) >= 0 {
			i++
			out.add(s[i : i+1])
			continue
		}
		if strings.IndexByte("_*`[", c) < 0 {
			_, size := utf8.DecodeRuneInString(s[i:])
			out.add(s[i : i+size])
			i += size - 1
			continue
		}
		begin, end, typ := i, c, markdownTypes[c]
		if c == '[' {
			end = ']'
		}
		i++
		pre := c == '`' && byteAt(s, i) == '`' && byteAt(s, i+1) == '`'
		if pre {
			typ, i = "pre", i+2
		}
		start := out.u16
		for i < len(s) && (s[i] != end || (pre && (byteAt(s, i+1) != '`' || byteAt(s, i+2) != '`'))) {
			_, size := utf8.DecodeRuneInString(s[i:])
			out.add(s[i : i+size])
			i += size
		}
		if i >= len(s) {
			return "", nil, entityError("Can't find end of the entity starting at byte offset %d", begin)
		}
		o := openEntity{typ: typ, start: start}
		if pre {
			i += 2
		}
		if c == '[' && byteAt(s, i+1) == '(' {
			if stop := strings.IndexByte(s[i:], ')'); stop > 0 {
				o.arg, i = s[i+2:i+stop], i+stop
			}
		}
		if e, ok := o.close(out.u16); ok && (typ != "text_link" || o.arg != "") {
			ents = append(ents, e)
		}
	}
	return out.String(), ents, nil
}
