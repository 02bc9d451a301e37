package tokenizer

import (
	"bytes"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"etchat/internal/fixtures"

	"golang.org/x/text/unicode/norm"
)

// roundTrip is what Decode(Encode(s)) must give for the fixture families:
// llama3 keeps the text as is, qwen3 returns its NFC form, gemma3 turns
// the meta-space character into a space.
func roundTrip(name, s string) string {
	switch name {
	case "qwen3":
		return norm.NFC.String(s)
	case "gemma3":
		return strings.ReplaceAll(s, "▁", " ")
	}
	return s
}

func streamAll(tk *Tokenizer, ids []int, skip bool) (string, []string) {
	d := tk.NewStreamDecoder(skip)
	var parts []string
	for _, id := range ids {
		if p := d.Add(id); p != "" {
			parts = append(parts, p)
		}
	}
	if p := d.Flush(); p != "" {
		parts = append(parts, p)
	}
	return strings.Join(parts, ""), parts
}

// tricky are held-out style inputs: long texts, emoji (with ZWJ and
// modifiers), CJK, combining marks, white-space runs, digit runs, mixed
// scripts, special tokens next to text.
var tricky = []string{
	"👨‍👩‍👧‍👦 family, 👍🏽 ok, 🇯🇵🇫🇷 flags, ❤️‍🔥",
	"東京都渋谷区で会いましょう。한국어도 좋아요! Привет, мир! مرحبا 🌍",
	"e\u0301e\u0301 a\u0308\u0304 \u0915\u094d\u0937 Z\u0351\u0334a\u0328l\u0358g\u0301o",
	"   \t\t  \n\n\n   \r\n \u00a0\u3000 x  \n",
	"0123456789 00000000000000000000 3.14159265358979 ١٢٣٤٥ ２０２４",
	"<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>",
	"<start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n",
	"<|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>trailing<|eot_id|>",
	"x<bos>y<eos>z<|endoftext|>w<|begin_of_text|>",
	"HELLO'S 'S 'ſ 'Re 'LL we'VE",
	"\x00\x01\x1b[31mred\x1b[0m \ufeffBOM \ufffd \U0010FFFF",
	"func f(a, b int) (int, error) {\n\treturn a + b, nil\n}\n\n\n",
	"▁▁ already meta▁space",
	strings.Repeat("ab", 3000),
	strings.Repeat(" ", 5000) + "x",
	strings.Repeat("9", 1000),
}

func TestTrickyInputs(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			tk := load(t, f.fixture)
			for _, s := range tricky {
				ids, toks := tk.EncodeTokens(s, false)
				if len(s) > 0 && len(ids) == 0 {
					t.Errorf("%q: no tokens", s)
				}
				for i, id := range ids {
					if want, _ := tk.Token(id); toks[i] != want {
						t.Fatalf("%q: token %d is %q, want %q", s, i, toks[i], want)
					}
				}
				// Added-token text in the input comes out as that token.
				for _, a := range tk.AddedTokens() {
					if a.Special && strings.Contains(s, a.Content) && !slices.Contains(ids, a.ID) {
						t.Errorf("%q: special token %q not matched", s, a.Content)
					}
				}
				if got := tk.Decode(ids, false); got != roundTrip(f.name, s) {
					t.Errorf("decode(encode(%q)) = %q", s, got)
				}
				got, parts := streamAll(tk, ids, false)
				if got != tk.Decode(ids, false) {
					t.Errorf("%q: stream %q, decode %q", s, got, tk.Decode(ids, false))
				}
				for _, p := range parts {
					if !utf8.ValidString(p) {
						t.Errorf("%q: stream piece %q is not valid UTF-8", s, p)
					}
				}
				if got, _ := streamAll(tk, ids, true); got != tk.Decode(ids, true) {
					t.Errorf("%q: stream skipping specials %q, decode %q", s, got, tk.Decode(ids, true))
				}
			}
		})
	}
}

// Streaming any id sequence, even one that makes no sense, gives Decode's
// text; every piece is valid UTF-8.
func TestStreamRandomIDs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			tk := load(t, f.fixture)
			var byteIDs, specials []int
			for id := 0; id < tk.VocabSize(); id++ {
				s, _ := tk.Token(id)
				rs := []rune(s)
				if _, ok := byteFallbackByte(s); ok || len(rs) == 1 && runeToByte[rs[0]] != 0 {
					byteIDs = append(byteIDs, id)
				}
				if tk.IsSpecial(id) {
					specials = append(specials, id)
				}
			}
			if len(byteIDs) < 200 || len(specials) == 0 {
				t.Fatalf("%d byte tokens, %d specials", len(byteIDs), len(specials))
			}
			for n := 0; n < 300; n++ {
				ids := make([]int, 1+r.IntN(30))
				for i := range ids {
					switch r.IntN(4) {
					case 0:
						ids[i] = specials[r.IntN(len(specials))]
					case 1, 2:
						ids[i] = byteIDs[r.IntN(len(byteIDs))]
					default:
						ids[i] = r.IntN(tk.VocabSize() + 10) // some out of range
					}
				}
				for _, skip := range []bool{false, true} {
					got, parts := streamAll(tk, ids, skip)
					if want := tk.Decode(ids, skip); got != want {
						t.Fatalf("ids %v skip %v: stream %q, decode %q", ids, skip, got, want)
					}
					for _, p := range parts {
						if !utf8.ValidString(p) {
							t.Fatalf("ids %v: piece %q is not valid UTF-8", ids, p)
						}
					}
				}
			}
		})
	}
}

// A character spread over several tokens is held back until complete.
func TestStreamHoldsPartialCharacters(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			tk := load(t, f.fixture)
			ids := tk.Encode("a🤖b", false)
			d := tk.NewStreamDecoder(false)
			var out []string
			for _, id := range ids {
				out = append(out, d.Add(id))
			}
			out = append(out, d.Flush())
			if strings.Join(out, "") != "a🤖b" {
				t.Fatalf("pieces %q", out)
			}
			for _, p := range out {
				if strings.ContainsRune(p, utf8.RuneError) {
					t.Errorf("piece %q has a replacement character", p)
				}
			}
		})
	}
}

// Long inputs are encoded on all cores; the result must not depend on it.
func TestParallelEncodeIsExact(t *testing.T) {
	text := mixedText(100 << 10)
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			tk := load(t, f.fixture)
			seq := first(tk.encode(text, true, 1, false))
			par := first(tk.encode(text, true, 3, false))
			if !slices.Equal(seq, par) {
				t.Fatalf("parallel encode differs (%d vs %d ids)", len(par), len(seq))
			}
			ids1, toks1 := tk.encode(text, true, 1, true)
			ids3, toks3 := tk.encode(text, true, 3, true)
			if !slices.Equal(ids1, seq) || !slices.Equal(ids3, seq) || !slices.Equal(toks1, toks3) || len(toks1) != len(seq) {
				t.Fatalf("tokens differ between sequential and parallel encodes")
			}
			for i, id := range seq {
				if tok, _ := tk.Token(id); tok != toks1[i] && !strings.Contains(text, toks1[i]) {
					t.Fatalf("token %d: %q is neither Token(%d)=%q nor matched text", i, toks1[i], id, tok)
				}
			}
			if got, want := tk.Decode(seq[len(tk.SpecialPrefix()):], false), roundTrip(f.name, text); got != want {
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				t.Fatalf("long text does not round-trip: at %d got %q want %q", i, got[i:min(i+40, len(got))], want[i:min(i+40, len(want))])
			}
			// Encoding line by line at lines that start with a non-space
			// gives the same ids: no token spans such a line break.
			var joined []int
			for _, chunk := range splitSafe(text) {
				joined = append(joined, tk.Encode(chunk, false)...)
			}
			if !slices.Equal(joined, seq[len(tk.SpecialPrefix()):]) {
				t.Fatalf("chunked encode differs")
			}
		})
	}
}

// splitSafe cuts text after each "\n" followed by a letter.
func splitSafe(s string) []string {
	var out []string
	start := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '\n' && (s[i+1] >= 'A' && s[i+1] <= 'Z') {
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func TestInvalidUTF8(t *testing.T) {
	tk := load(t, families[0].fixture)
	ids := tk.Encode("a\xffb\xe4\xbd", false)
	if got := tk.Decode(ids, false); got != "a\ufffdb\ufffd" {
		t.Errorf("got %q", got)
	}
}

func TestAccessors(t *testing.T) {
	for _, c := range []struct {
		name, fixture string
		vocab         int
		bos, eos      string
		prefix        int
	}{
		{"llama3", families[0].fixture, 128256, "<|begin_of_text|>", "<|end_of_text|>", 0},
		{"gemma3", families[1].fixture, 262145, "<bos>", "<eos>", 1},
		{"qwen3", families[2].fixture, 151669, "", "<|endoftext|>", 0},
	} {
		tk := load(t, c.fixture)
		if tk.VocabSize() != c.vocab {
			t.Errorf("%s: VocabSize %d, want %d", c.name, tk.VocabSize(), c.vocab)
		}
		if len(tk.SpecialPrefix()) != c.prefix {
			t.Errorf("%s: SpecialPrefix %v", c.name, tk.SpecialPrefix())
		}
		for _, w := range []struct {
			got  func() (int, bool)
			want string
		}{{tk.BOS, c.bos}, {tk.EOS, c.eos}} {
			id, ok := w.got()
			s, _ := tk.Token(id)
			if ok != (w.want != "") || ok && s != w.want {
				t.Errorf("%s: got %q (%v), want %q", c.name, s, ok, w.want)
			}
		}
		for _, id := range []int{0, 1, 100, c.vocab - 1} {
			s, ok := tk.Token(id)
			if !ok {
				t.Errorf("%s: Token(%d) missing", c.name, id)
				continue
			}
			if back, ok := tk.TokenID(s); !ok || back != id {
				t.Errorf("%s: TokenID(Token(%d)=%q) = %d, %v", c.name, id, s, back, ok)
			}
		}
		for _, id := range []int{-1, c.vocab, 1 << 40} {
			if _, ok := tk.Token(id); ok {
				t.Errorf("%s: Token(%d) exists", c.name, id)
			}
			if tk.IsSpecial(id) {
				t.Errorf("%s: IsSpecial(%d)", c.name, id)
			}
		}
		if _, ok := tk.TokenID("no such token, surely"); ok {
			t.Errorf("%s: TokenID of nonsense", c.name)
		}
	}
	tk := load(t, families[2].fixture)
	im, _ := tk.TokenID("<|im_end|>")
	think, _ := tk.TokenID("<think>")
	if !tk.IsSpecial(im) || tk.IsSpecial(think) {
		t.Errorf("qwen3: IsSpecial(<|im_end|>)=%v IsSpecial(<think>)=%v", tk.IsSpecial(im), tk.IsSpecial(think))
	}
}

func first(ids []int, _ []string) []int { return ids }

// Hugging Face's own Llama 3.1 tokenizer.json adds <|begin_of_text|> with a
// TemplateProcessing inside a Sequence; the fixture's copy has only the
// ByteLevel part. Splice the former in.
func TestLlama31PostProcessor(t *testing.T) {
	data, err := os.ReadFile(fixtures.Tokenizer(t, fixtures.Llama3))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := objectFields(data)
	if err != nil {
		t.Fatal(err)
	}
	old := field(fs, "post_processor")
	if old == nil {
		t.Fatal("no post_processor")
	}
	const pp = `{"type":"Sequence","processors":[{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":false,"use_regex":true},` +
		`{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<|begin_of_text|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],` +
		`"pair":[],"special_tokens":{"<|begin_of_text|>":{"id":"<|begin_of_text|>","ids":[128000],"tokens":["<|begin_of_text|>"]}}}]}`
	i := bytes.Index(data, old)
	spliced := slices.Concat(data[:i], []byte(pp), data[i+len(old):])
	tk, err := Parse(spliced)
	if err != nil {
		t.Fatal(err)
	}
	base := load(t, fixtures.Llama3)
	text := "Hello world<|eot_id|>"
	want := append([]int{128000}, base.Encode(text, false)...)
	if got := tk.Encode(text, true); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if id, ok := tk.BOS(); !ok || id != 128000 {
		t.Errorf("BOS %d %v", id, ok)
	}
	if got := tk.Decode(tk.Encode(text, true), true); got != "Hello world" {
		t.Errorf("decode %q", got)
	}
}

// Parse reads the merges ahead at the first "merges": [ of the file; a
// decoy there (an ignored top-level field) and repeated vocabulary keys
// must not change the tokenizer.
func TestParseMergesDecoy(t *testing.T) {
	data, err := os.ReadFile(fixtures.Tokenizer(t, fixtures.Llama3))
	if err != nil {
		t.Fatal(err)
	}
	base := load(t, fixtures.Llama3)
	decoy := slices.Concat([]byte(`{"merges": [["x","y"], 1], "vocab": {"a": 1},`), data[1:])
	// The same key twice in the vocabulary: the later id is kept.
	i := bytes.Index(decoy, []byte(`"vocab"`))
	j := i + bytes.IndexByte(decoy[i:], '{') + 1
	i = bytes.Index(decoy[j:], []byte(`"vocab"`)) + j
	j = i + bytes.IndexByte(decoy[i:], '{') + 1
	dup := slices.Concat(decoy[:j], []byte(`"Hello": 5, `), decoy[j:])
	// Two keys for one id, and an empty key.
	shared := slices.Concat(decoy[:j], []byte(`"HelloX": 9906, "": 5, `), decoy[j:])
	for _, d := range [][]byte{decoy, dup, shared} {
		tk, err := Parse(d)
		if err != nil {
			t.Fatal(err)
		}
		text := mixedText(1 << 14)
		if got, want := tk.Encode(text, true), base.Encode(text, true); !slices.Equal(got, want) {
			t.Errorf("ids differ from the fixture's")
		}
		if id, ok := tk.TokenID("Hello"); !ok || id != 9906 {
			t.Errorf("Hello: %d %v", id, ok)
		}
		if id, ok := tk.TokenID("HelloX"); ok != (&d[0] == &shared[0]) || ok && id != 9906 {
			t.Errorf("HelloX: %d %v", id, ok)
		}
		for _, id := range []int{5, 9906} {
			s, ok := tk.Token(id)
			if want, _ := base.Token(id); !ok || s != want {
				t.Errorf("%d: %q %v, want %q", id, s, ok, want)
			}
		}
	}
}

// skipWS skips runs of spaces several at a time: the same as one by one.
func TestSkipWS(t *testing.T) {
	naive := func(d []byte, i int) int {
		for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
			i++
		}
		return i
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		d := make([]byte, r.IntN(40))
		for k := range d {
			d[k] = " \t\n\rx\"["[r.IntN(7)]
			if r.IntN(3) > 0 {
				d[k] = ' '
			}
		}
		i := r.IntN(len(d) + 1)
		if got, want := skipWS(d, i), naive(d, i); got != want {
			t.Fatalf("skipWS(%q, %d) = %d, want %d", d, i, got, want)
		}
	}
}
