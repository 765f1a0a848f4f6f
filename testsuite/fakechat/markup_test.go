package fakechat_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/testsuite/fakechat"
)

// TestTelegramParsesMarkup sends texts with each parse mode and checks what
// a person would see (the text and entities of the answer), or the Bot
// API's refusal.
func TestTelegramParsesMarkup(t *testing.T) {
	type ents = []fakechat.Entity
	tests := []struct {
		name, mode, text string
		plain            string
		entities         ents
		err              string // the description after "Bad Request: can't parse entities: "
	}{
		// HTML
		{name: "html tags", mode: "HTML", text: "<b>bold</b> and <i>it</i> <u>u</u> <s>s</s> <code>c</code>",
			plain: "bold and it u s c", entities: ents{{Type: "bold", Length: 4}, {Type: "italic", Offset: 9, Length: 2},
				{Type: "underline", Offset: 12, Length: 1}, {Type: "strikethrough", Offset: 14, Length: 1}, {Type: "code", Offset: 16, Length: 1}}},
		{name: "html nesting", mode: "HTML", text: "<b>a <i>b</i></b>",
			plain: "a b", entities: ents{{Type: "bold", Length: 3}, {Type: "italic", Offset: 2, Length: 1}}},
		{name: "html link", mode: "HTML", text: `see <a href="https://example.com/?a=1&amp;b=2">the run</a>`,
			plain: "see the run", entities: ents{{Type: "text_link", Offset: 4, Length: 7, URL: "https://example.com/?a=1&b=2"}}},
		{name: "html pre with language", mode: "HTML", text: `<pre><code class="language-go">x := 1</code></pre>`,
			plain: "x := 1", entities: ents{{Type: "pre", Length: 6, Language: "go"}}},
		{name: "html spoiler and quote", mode: "HTML", text: `<span class="tg-spoiler">s</span><tg-spoiler>t</tg-spoiler><blockquote expandable>q</blockquote>`,
			plain: "stq", entities: ents{{Type: "spoiler", Length: 1}, {Type: "spoiler", Offset: 1, Length: 1}, {Type: "expandable_blockquote", Offset: 2, Length: 1}}},
		{name: "html escapes", mode: "HTML", text: "a &lt;b&gt; &amp; &quot;c&quot; &#65;&#x42; AT&T &copy;",
			plain: `a <b> & "c" AB AT&T &copy;`},
		{name: "offsets in UTF-16", mode: "HTML", text: "😀 <b>x</b>",
			plain: "😀 x", entities: ents{{Type: "bold", Offset: 3, Length: 1}}},
		{name: "trimmed", mode: "HTML", text: "  <b> x </b>  ",
			plain: "x", entities: ents{{Type: "bold", Length: 1}}},
		{name: "html unclosed", mode: "HTML", text: "<b>x", err: `Can't find end tag corresponding to start tag "b"`},
		{name: "html bare less-than", mode: "HTML", text: "if a < b", err: `Unsupported start tag "" at byte offset 5`},
		{name: "html unknown tag", mode: "HTML", text: "ok <script>x</script>", err: `Unsupported start tag "script" at byte offset 3`},
		{name: "html agent text", mode: "HTML", text: "use <T> here", err: `Unsupported start tag "t" at byte offset 4`},
		{name: "html crossed tags", mode: "HTML", text: "<b>x<i>y</b></i>", err: `Unmatched end tag at byte offset 8, expected "</i>", found "</b>"`},
		{name: "html stray end tag", mode: "HTML", text: "x</b>", err: "Unexpected end tag at byte offset 1"},
		{name: "html unclosed start tag", mode: "HTML", text: `<a href="https://x`, err: "Unclosed start tag at byte offset 0"},
		{name: "html span without class", mode: "HTML", text: "<span>x</span>", err: `Tag "span" must have class "tg-spoiler" at byte offset 0`},
		{name: "html empty attribute", mode: "HTML", text: `<a ="x">y</a>`, err: `Empty attribute name in the tag "a" at byte offset 0`},
		{name: "html bare value", mode: "HTML", text: `<a href=x/y>z</a>`, err: "Unexpected end of name token at byte offset 8"},
		// MarkdownV2
		{name: "markdownv2 entities", mode: "MarkdownV2", text: "*b* _i_ __u__ ~s~ ||p|| `c` [l](https://e.x/a\\)b)",
			plain: "b i u s p c l", entities: ents{{Type: "bold", Length: 1}, {Type: "italic", Offset: 2, Length: 1},
				{Type: "underline", Offset: 4, Length: 1}, {Type: "strikethrough", Offset: 6, Length: 1},
				{Type: "spoiler", Offset: 8, Length: 1}, {Type: "code", Offset: 10, Length: 1},
				{Type: "text_link", Offset: 12, Length: 1, URL: "https://e.x/a)b"}}},
		{name: "markdownv2 escapes", mode: "MarkdownV2", text: `Done\. 1\+1\=2 \(ok\) a\_b`, plain: "Done. 1+1=2 (ok) a_b"},
		{name: "markdownv2 pre", mode: "MarkdownV2", text: "```python\nprint(1)\n```",
			plain: "print(1)", entities: ents{{Type: "pre", Length: 8, Language: "python"}}},
		{name: "markdownv2 code keeps reserved", mode: "MarkdownV2", text: "`a.b(c)`", plain: "a.b(c)", entities: ents{{Type: "code", Length: 6}}},
		{name: "markdownv2 quote", mode: "MarkdownV2", text: ">quoted\n>on\nafter",
			plain: "quoted\non\nafter", entities: ents{{Type: "blockquote", Length: 9}}},
		{name: "markdownv2 reserved dot", mode: "MarkdownV2", text: "Done.", err: `Character '.' is reserved and must be escaped with the preceding '\'`},
		{name: "markdownv2 reserved dash", mode: "MarkdownV2", text: "a - b", err: `Character '-' is reserved and must be escaped with the preceding '\'`},
		{name: "markdownv2 unclosed bold", mode: "MarkdownV2", text: "x *bold", err: "Can't find end of Bold entity at byte offset 2"},
		{name: "markdownv2 unclosed code", mode: "MarkdownV2", text: "`code", err: "Can't find end of Code entity at byte offset 0"},
		{name: "markdownv2 unclosed URL", mode: "MarkdownV2", text: "[a](https://x", err: "Can't find end of a URL at byte offset 4"},
		// Markdown (legacy)
		{name: "markdown", mode: "Markdown", text: "*b* _i_ `c` [l](https://e.x) a.b-c",
			plain: "b i c l a.b-c", entities: ents{{Type: "bold", Length: 1}, {Type: "italic", Offset: 2, Length: 1},
				{Type: "code", Offset: 4, Length: 1}, {Type: "text_link", Offset: 6, Length: 1, URL: "https://e.x"}}},
		{name: "markdown unclosed", mode: "Markdown", text: "snake_case", err: "Can't find end of the entity starting at byte offset 5"},
		// None
		{name: "no parse mode", text: "<b>as is</b> *too*", plain: "<b>as is</b> *too*"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTelegram(t)
			status, a := call(t, tg, "sendMessage", map[string]any{"chat_id": chat, "text": tc.text, "parse_mode": tc.mode})
			if tc.err != "" {
				assert.Equal(t, http.StatusBadRequest, status)
				assert.Equal(t, "Bad Request: can't parse entities: "+tc.err, a.Description)
				return
			}
			require.Equal(t, http.StatusOK, status, a.Description)
			sent := tg.Sent(chat)
			require.Len(t, sent, 1)
			assert.Equal(t, tc.plain, sent[0].Plain)
			assert.Equal(t, tc.entities, sent[0].Entities)
			assert.Equal(t, tc.text, sent[0].Text)
		})
	}
}
