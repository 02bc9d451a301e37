package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

type obj = map[string]any

func mustParse(t *testing.T, v obj) *Tokenizer {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// spTokenizer is a Llama 2 style SentencePiece BPE: "▁" for spaces, byte
// fallback, a <s> BOS, and a decoder that strips the first space.
func spTokenizer(byteFallback, fuseUnk bool) obj {
	vocab := obj{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := 0; b < 256; b++ {
		vocab[fmt.Sprintf("<0x%02X>", b)] = 3 + b
	}
	for i, s := range []string{"▁", "h", "e", "l", "o", "▁h", "ll", "▁he", "llo", "▁hello", "w", "r", "d"} {
		vocab[s] = 259 + i
	}
	return obj{
		"version": "1.0",
		"added_tokens": []obj{
			{"id": 0, "content": "<unk>", "special": true},
			{"id": 1, "content": "<s>", "special": true},
			{"id": 2, "content": "</s>", "special": true},
		},
		"normalizer": obj{"type": "Sequence", "normalizers": []obj{
			{"type": "Prepend", "prepend": "▁"},
			{"type": "Replace", "pattern": obj{"String": " "}, "content": "▁"},
		}},
		"pre_tokenizer": nil,
		"post_processor": obj{
			"type":           "TemplateProcessing",
			"single":         []obj{{"SpecialToken": obj{"id": "<s>", "type_id": 0}}, {"Sequence": obj{"id": "A", "type_id": 0}}},
			"pair":           []obj{},
			"special_tokens": obj{"<s>": obj{"id": "<s>", "ids": []int{1}, "tokens": []string{"<s>"}}},
		},
		"decoder": obj{"type": "Sequence", "decoders": []obj{
			{"type": "Replace", "pattern": obj{"String": "▁"}, "content": " "},
			{"type": "ByteFallback"},
			{"type": "Fuse"},
			{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": obj{
			"type": "BPE", "unk_token": "<unk>", "byte_fallback": byteFallback, "fuse_unk": fuseUnk,
			"vocab":  vocab,
			"merges": []string{"▁ h", "l l", "▁h e", "ll o", "▁he llo"},
		},
	}
}

func TestSentencePieceStyle(t *testing.T) {
	tk := mustParse(t, spTokenizer(true, true))
	hello := []int{268, 259, 269, 263, 270, 262, 271} // ▁hello ▁ w o r l d
	if got := tk.Encode("hello world", false); !slices.Equal(got, hello) {
		t.Errorf("hello world: %v, want %v", got, hello)
	}
	if got := tk.Encode("hello world", true); !slices.Equal(got, append([]int{1}, hello...)) {
		t.Errorf("with BOS: %v", got)
	}
	if id, ok := tk.BOS(); !ok || id != 1 {
		t.Errorf("BOS %d %v", id, ok)
	}
	if got := tk.Decode(hello, false); got != "hello world" {
		t.Errorf("decode %q", got)
	}
	// é is not in the vocabulary: its two bytes.
	he := []int{264, 3 + 0xC3, 3 + 0xA9}
	if got := tk.Encode("hé", false); !slices.Equal(got, he) {
		t.Errorf("hé: %v, want %v", got, he)
	}
	if got := tk.Decode(he, false); got != "hé" {
		t.Errorf("decode hé: %q", got)
	}
	// An ill-formed byte run decodes to one U+FFFD per byte (HF's
	// ByteFallback), and the stream agrees.
	bad := []int{264, 3 + 0xE4, 3 + 0xBD, 260}
	if got := tk.Decode(bad, false); got != "h\uFFFD\uFFFDh" {
		t.Errorf("decode ill-formed bytes: %q", got)
	}
	for _, ids := range [][]int{hello, he, bad, append([]int{1}, hello...), {259, 259, 268}} {
		for _, skip := range []bool{false, true} {
			if got, _ := streamAll(tk, ids, skip); got != tk.Decode(ids, skip) {
				t.Errorf("stream %v: %q, decode %q", ids, got, tk.Decode(ids, skip))
			}
		}
	}
	// Special-token text in the input; Prepend applies to each piece.
	if got, want := tk.Encode("<s>hello", false), []int{1, 268}; !slices.Equal(got, want) {
		t.Errorf("<s>hello: %v, want %v", got, want)
	}

	// Without byte fallback, unknown characters become <unk>, fused or not.
	tk = mustParse(t, spTokenizer(false, true))
	if got, want := tk.Encode("hxyz", false), []int{264, 0}; !slices.Equal(got, want) {
		t.Errorf("fused unk: %v, want %v", got, want)
	}
	tk = mustParse(t, spTokenizer(false, false))
	if got, want := tk.Encode("hxyz", false), []int{264, 0, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("unfused unk: %v, want %v", got, want)
	}
}

func TestMetaspace(t *testing.T) {
	for _, c := range []struct {
		scheme string
		split  bool
		text   string
		want   []int
		dec    string
	}{
		{"first", false, "hello world", []int{268, 259, 269, 263, 270, 262, 271}, "hello world"},
		{"first", true, "hello world", []int{268, 259, 269, 263, 270, 262, 271}, "hello world"},
		{"first", true, "<s>hello", []int{1, 260, 261, 267}, "<s>hello"},
		{"always", true, "<s>hello", []int{1, 268}, "<s> hello"},
		{"never", true, "hello", []int{260, 261, 267}, "hello"},
	} {
		j := spTokenizer(true, false)
		j["normalizer"] = nil
		j["pre_tokenizer"] = obj{"type": "Metaspace", "replacement": "▁", "prepend_scheme": c.scheme, "split": c.split}
		j["decoder"] = obj{"type": "Metaspace", "replacement": "▁", "prepend_scheme": c.scheme, "split": c.split}
		tk := mustParse(t, j)
		got := tk.Encode(c.text, false)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s/%v %q: %v, want %v", c.scheme, c.split, c.text, got, c.want)
		}
		if d := tk.Decode(got, false); d != c.dec {
			t.Errorf("%s/%v %q: decode %q, want %q", c.scheme, c.split, c.text, d, c.dec)
		}
		if s, _ := streamAll(tk, got, false); s != c.dec {
			t.Errorf("%s/%v %q: stream %q, want %q", c.scheme, c.split, c.text, s, c.dec)
		}
	}
}

// byteTokenizer has one token per byte (id = byte value) and no merges, so
// the expected ids of any text are its bytes.
func byteTokenizer(pre obj, normalizer obj, added []obj) obj {
	vocab := obj{}
	for b := 0; b < 256; b++ {
		vocab[byteLevelStr[b]] = b
	}
	return obj{
		"added_tokens":   added,
		"normalizer":     normalizer,
		"pre_tokenizer":  pre,
		"post_processor": obj{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
		"decoder":        obj{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model":          obj{"type": "BPE", "vocab": vocab, "merges": [][]string{}},
	}
}

func bytesOf(s string) []int {
	out := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int(s[i])
	}
	return out
}

func TestAddedTokenFlags(t *testing.T) {
	added := []obj{
		{"id": 300, "content": "<mask>", "lstrip": true, "special": true},
		{"id": 301, "content": "<r>", "rstrip": true, "special": true},
		{"id": 302, "content": "[x]", "single_word": true},
		{"id": 303, "content": "Hey", "normalized": true},
		{"id": 304, "content": "<|special|>", "special": true},
		{"id": 305, "content": "<|special|>x"}, // longest match wins
	}
	tk := mustParse(t, byteTokenizer(obj{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		obj{"type": "Lowercase"}, added))
	cat := func(parts ...any) []int {
		var out []int
		for _, p := range parts {
			switch v := p.(type) {
			case string:
				out = append(out, bytesOf(v)...)
			case int:
				out = append(out, v)
			}
		}
		return out
	}
	for _, c := range []struct {
		text string
		want []int
	}{
		{"hi <mask>", cat("hi", 300)},
		{"hi \t <mask> x", cat("hi", 300, " x")},
		{"<r>   hi", cat(301, "hi")},
		{"a[x]b", cat("a[x]b")},
		{"a [x] b", cat("a ", 302, " b")},
		{"[x]", cat(302)},
		{"HEY you", cat(303, " you")},
		{"hey", cat(303)},
		{"<|special|>y<|special|>x", cat(304, "y", 305)},
		{"ÀB", cat("àb")},
	} {
		if got := tk.Encode(c.text, false); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.text, got, c.want)
		}
	}
	// HF's Encoding.tokens show what an added token matched.
	if _, toks := tk.EncodeTokens("x \t<mask> HEY", false); !slices.Equal(toks, []string{"x", " \t<mask>", "Ġ", "hey"}) {
		t.Errorf("tokens %q", toks)
	}
	if s, _ := tk.Token(303); s != "hey" {
		t.Errorf("Token(303) = %q, want the normalized content", s)
	}
	ids := cat("h", 304, "i")
	if got := tk.Decode(ids, false); got != "h<|special|>i" {
		t.Errorf("decode %q", got)
	}
	if got := tk.Decode(ids, true); got != "hi" {
		t.Errorf("decode skipping specials %q", got)
	}
	if !tk.IsSpecial(304) || tk.IsSpecial(302) {
		t.Error("IsSpecial")
	}
	if tk.VocabSize() != 306 {
		t.Errorf("VocabSize %d", tk.VocabSize())
	}
	// ByteLevel's add_prefix_space adds a space to every piece.
	tk = mustParse(t, byteTokenizer(obj{"type": "ByteLevel", "add_prefix_space": true}, nil, added))
	if got, want := tk.Encode("hi<|special|>there you", false), cat(" hi", 304, " there", " you"); !slices.Equal(got, want) {
		t.Errorf("add_prefix_space: %v, want %v", got, want)
	}
}

func preSplit(t *testing.T, pre obj, text string) []string {
	t.Helper()
	b, _ := json.Marshal(pre)
	p, err := parsePreTokenizer(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, q := range p(nil, piece{s: text, first: true}) {
		out = append(out, materialize(q).s)
	}
	return out
}

func TestPreTokenizers(t *testing.T) {
	dash := "the-final--countdown"
	hey := "Hey friend!     How are you?!?"
	for _, c := range []struct {
		pre  obj
		text string
		want []string
	}{
		{obj{"type": "Split", "pattern": obj{"String": "-"}, "behavior": "Removed"}, dash, []string{"the", "final", "countdown"}},
		{obj{"type": "Split", "pattern": obj{"String": "-"}, "behavior": "Isolated"}, dash, []string{"the", "-", "final", "-", "-", "countdown"}},
		{obj{"type": "Split", "pattern": obj{"String": "-"}, "behavior": "MergedWithPrevious"}, dash, []string{"the-", "final-", "-", "countdown"}},
		{obj{"type": "Split", "pattern": obj{"String": "-"}, "behavior": "MergedWithNext"}, dash, []string{"the", "-final", "-", "-countdown"}},
		{obj{"type": "Split", "pattern": obj{"Regex": "-+"}, "behavior": "Contiguous"}, dash, []string{"the", "-", "final", "--", "countdown"}},
		{obj{"type": "Split", "pattern": obj{"Regex": `\p{L}+`}, "behavior": "Removed", "invert": true}, "ab, cd!", []string{"ab", "cd"}},
		{obj{"type": "Digits", "individual_digits": true}, "Call 123 please", []string{"Call ", "1", "2", "3", " please"}},
		{obj{"type": "Digits", "individual_digits": false}, "Call 123 please", []string{"Call ", "123", " please"}},
		{obj{"type": "Whitespace"}, hey, []string{"Hey", "friend", "!", "How", "are", "you", "?!?"}},
		{obj{"type": "WhitespaceSplit"}, hey, []string{"Hey", "friend!", "How", "are", "you?!?"}},
		{obj{"type": "Punctuation", "behavior": "Isolated"}, hey, []string{"Hey friend", "!", "     How are you", "?", "!", "?"}},
		{obj{"type": "CharDelimiterSplit", "delimiter": "x"}, "axbxxc", []string{"a", "b", "c"}},
		{obj{"type": "BertPreTokenizer"}, "Hey, you!", []string{"Hey", ",", "you", "!"}},
		{obj{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}, "Hey  you", []string{"▁Hey", "▁", "▁you"}},
		{obj{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}, "Hey you's", []string{"ĠHey", "Ġyou", "'s"}},
		{obj{"type": "Sequence", "pretokenizers": []obj{
			{"type": "Split", "pattern": obj{"Regex": patCL100K}, "behavior": "Isolated"},
			{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}}, "Hello  world 12345", []string{"Hello", "Ġ", "Ġworld", "Ġ", "123", "45"}},
		{obj{"type": "Split", "pattern": obj{"Regex": `\p{Lu}?\p{Ll}+|\d{1,2}`}, "behavior": "Isolated"}, "getHTTPResponse2024", []string{"get", "HTTP", "Response", "20", "24"}},
	} {
		if got := preSplit(t, c.pre, c.text); !slices.Equal(got, c.want) {
			t.Errorf("%v on %q: %q, want %q", c.pre, c.text, got, c.want)
		}
	}
}

func norm1(t *testing.T, n obj, s string) string {
	t.Helper()
	b, _ := json.Marshal(n)
	f, err := parseNormalizer(b)
	if err != nil {
		t.Fatal(err)
	}
	return f(s)
}

func TestNormalizers(t *testing.T) {
	for _, c := range []struct {
		n        obj
		in, want string
	}{
		{obj{"type": "NFKC"}, "Ｆｕｌｌ①ﬁ", "Full1fi"},
		{obj{"type": "NFC"}, "e\u0301", "é"},
		{obj{"type": "NFD"}, "é", "e\u0301"},
		{obj{"type": "NFKD"}, "ﬁé", "fie\u0301"},
		{obj{"type": "Lowercase"}, "İSTANBUL ΣΑΣ", "i\u0307stanbul σασ"},
		{obj{"type": "Strip", "strip_left": true, "strip_right": false}, " \t x \n", "x \n"},
		{obj{"type": "Strip", "strip_left": true, "strip_right": true}, "\u3000 x \n", "x"},
		{obj{"type": "Prepend", "prepend": "▁"}, "", ""},
		{obj{"type": "Prepend", "prepend": "▁"}, "a", "▁a"},
		{obj{"type": "Replace", "pattern": obj{"Regex": ` {2,}`}, "content": " "}, "a   b  c d", "a b c d"},
		{obj{"type": "StripAccents"}, "e\u0301a\u0308", "ea"},
		{obj{"type": "Sequence", "normalizers": []obj{{"type": "NFD"}, {"type": "StripAccents"}, {"type": "Lowercase"}}}, "Érdős", "erdos"},
		{obj{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true}, "Héllo\t世界\x00", "hello  世  界 "},
		{obj{"type": "ByteLevel"}, "a é", "aĠÃ©"},
	} {
		if got := norm1(t, c.n, c.in); got != c.want {
			t.Errorf("%v(%q) = %q, want %q", c.n, c.in, got, c.want)
		}
	}
}

// bl spells bytes in the byte-level alphabet.
func bl(bs ...byte) string {
	var b strings.Builder
	for _, c := range bs {
		b.WriteString(byteLevelStr[c])
	}
	return b.String()
}

func TestDecoders(t *testing.T) {
	dec := func(d obj, toks ...string) string {
		b, _ := json.Marshal(d)
		f, err := parseDecoder(b)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(f(toks), "")
	}
	for _, c := range []struct {
		d    obj
		toks []string
		want string
	}{
		// Rust's from_utf8_lossy: one U+FFFD per maximal ill-formed part.
		{obj{"type": "ByteLevel"}, []string{bl(0xE4), bl(0xBD), "A", bl(0xF0, 0x9F), bl(0x98, 0x80), "Ġ", bl(0x80), bl(0xED, 0xA0, 0x80)}, "\uFFFDA😀 \uFFFD\uFFFD\uFFFD\uFFFD"},
		{obj{"type": "ByteLevel"}, []string{"<|eot|>", "Ġhi"}, "<|eot|> hi"},
		{obj{"type": "ByteFallback"}, []string{"<0xE4>", "<0xBD>", "<0xA0>", "a", "<0xE4>", "<0xBD>", "b"}, "你a\uFFFD\uFFFDb"},
		{obj{"type": "Strip", "content": "x", "start": 2, "stop": 1}, []string{"xxxaxx", "xb"}, "xaxb"},
		{obj{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}, []string{"▁a", "▁b"}, "a b"},
		{obj{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never"}, []string{"▁a", "▁b"}, " a b"},
		{obj{"type": "BPEDecoder", "suffix": "</w>"}, []string{"a</w>", "b", "c</w>"}, "a bc"},
		{obj{"type": "WordPiece", "prefix": "##", "cleanup": true}, []string{"un", "##believ", "##able", "!"}, "unbelievable!"},
		// Per token, replacements in turn: "  ' s" -> " 's" -> "'s".
		{obj{"type": "WordPiece", "prefix": "##", "cleanup": true}, []string{"x", " ' s", "do", "n't"}, "x's don't"},
		{obj{"type": "Replace", "pattern": obj{"String": "_"}, "content": " "}, []string{"a_b", "_"}, "a b "},
	} {
		if got := dec(c.d, c.toks...); got != c.want {
			t.Errorf("%v %q: %q, want %q", c.d, c.toks, got, c.want)
		}
	}
}

// A decoder that treats the last token specially streams too.
func TestStreamBPEDecoder(t *testing.T) {
	j := spTokenizer(true, false)
	j["normalizer"] = nil
	j["decoder"] = obj{"type": "BPEDecoder", "suffix": "d"}
	tk := mustParse(t, j)
	ids := []int{260, 261, 262, 271, 269, 263, 270, 271, 271}
	want := tk.Decode(ids, false)
	if want != "hel wor " { // the suffix is a space but on the last token
		t.Fatalf("decode %q", want)
	}
	got, parts := streamAll(tk, ids, false)
	if got != want {
		t.Errorf("stream %q (%q), decode %q", got, parts, want)
	}
}

func TestPostProcessors(t *testing.T) {
	j := spTokenizer(true, false)
	j["post_processor"] = obj{"type": "Sequence", "processors": []obj{
		{"type": "ByteLevel", "trim_offsets": false},
		{
			"type":   "TemplateProcessing",
			"single": []obj{{"SpecialToken": obj{"id": "<s>"}}, {"Sequence": obj{"id": "A"}}, {"SpecialToken": obj{"id": "</s>"}}},
			"special_tokens": obj{
				"<s>":  obj{"id": "<s>", "ids": []int{1}},
				"</s>": obj{"id": "</s>", "ids": []int{2}},
			},
		},
	}}
	tk := mustParse(t, j)
	if got := tk.Encode("hello", true); !slices.Equal(got, []int{1, 268, 2}) {
		t.Errorf("template: %v", got)
	}
	if id, ok := tk.EOS(); !ok || id != 2 {
		t.Errorf("EOS %d %v", id, ok)
	}
	j["post_processor"] = obj{"type": "RobertaProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 1}}
	tk = mustParse(t, j)
	if got := tk.Encode("hello", true); !slices.Equal(got, []int{1, 268, 2}) {
		t.Errorf("roberta: %v", got)
	}
}

func TestParseErrors(t *testing.T) {
	base := func(key string, v any) []byte {
		j := spTokenizer(true, false)
		if key != "" {
			j[key] = v
		}
		b, _ := json.Marshal(j)
		return b
	}
	model := func(k string, v any) []byte {
		j := spTokenizer(true, false)
		j["model"].(obj)[k] = v
		b, _ := json.Marshal(j)
		return b
	}
	good := base("", nil)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "expected an object"},
		{"not json", []byte("hello"), "expected an object"},
		{"truncated", good[:len(good)/2], "invalid JSON"},
		{"no model", []byte(`{"version":"1.0"}`), "no model"},
		{"unigram", base("model", obj{"type": "Unigram", "vocab": []any{}}), `"Unigram"`},
		{"wordpiece", base("model", obj{"type": "WordPiece", "vocab": obj{}}), `"WordPiece"`},
		{"precompiled", base("normalizer", obj{"type": "Precompiled", "precompiled_charsmap": "AAAA"}), `"Precompiled"`},
		{"unknown normalizer", base("normalizer", obj{"type": "Nmt"}), `"Nmt"`},
		{"unknown pre-tokenizer", base("pre_tokenizer", obj{"type": "UnicodeScripts"}), `"UnicodeScripts"`},
		{"nested unknown", base("pre_tokenizer", obj{"type": "Sequence", "pretokenizers": []obj{{"type": "FixedLength"}}}), `"FixedLength"`},
		{"unknown decoder", base("decoder", obj{"type": "CTC"}), `"CTC"`},
		{"unknown post", base("post_processor", obj{"type": "Magic"}), `"Magic"`},
		{"lookbehind", base("pre_tokenizer", obj{"type": "Split", "pattern": obj{"Regex": `(?<=a)b`}, "behavior": "Isolated"}), `(?<=a)b`},
		{"bad behavior", base("pre_tokenizer", obj{"type": "Split", "pattern": obj{"String": "a"}, "behavior": "Sideways"}), "Sideways"},
		{"merge not in vocab", model("merges", []string{"▁ q"}), `"q" is not in the vocabulary`},
		{"merge result not in vocab", model("merges", []string{"h e"}), `"he" is not in the vocabulary`},
		{"merge not a pair", model("merges", []string{"abc"}), "not two tokens"},
		{"merge bad type", model("merges", []any{1}), "merge must be"},
		{"bad vocab id", model("vocab", obj{"a": -1}), "not a non-negative integer"},
		{"huge vocab id", model("vocab", obj{"a": 1 << 40}), "out of range"},
		{"huge added id", base("added_tokens", []obj{{"id": 1 << 40, "content": "x"}}), "out of range"},
		{"sparse vocab", model("vocab", obj{"a": 1 << 23}), "too sparse"},
		{"sparse added", base("added_tokens", []obj{{"id": 1 << 23, "content": "x"}}), "too sparse"},
		{"unk missing", model("unk_token", "<nope>"), "<nope>"},
		{"dropout", model("dropout", 0.1), "dropout"},
		{"undefined template token", base("post_processor", obj{"type": "TemplateProcessing", "single": []obj{{"SpecialToken": obj{"id": "<x>"}}, {"Sequence": obj{"id": "A"}}}, "special_tokens": obj{}}), "<x>"},
	} {
		_, err := Parse(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := Load("/nonexistent/tokenizer.json"); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}
