package tokenizer

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"etchat/internal/fixtures"
)

// The bytes of the tokens of every golden text, joined, are Hugging Face's
// decoding of those ids (where it kept every byte: no U+FFFD).
func TestTokenBytesJoinToHFDecode(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			tk := load(t, f.fixture)
			var g goldenFile
			fixtures.Golden(t, f.name, &g)
			checked := 0
			for _, c := range g.Encode {
				if strings.ContainsRune(c.Decoded, utf8.RuneError) {
					continue
				}
				var b []byte
				for _, id := range c.IDs {
					tb, err := tk.TokenBytes(id)
					if err != nil {
						t.Fatalf("%q: id %d: %v", c.Text, id, err)
					}
					b = append(b, tb...)
				}
				if string(b) != c.Decoded {
					t.Errorf("%q: joined token bytes %q, HF decodes %q", c.Text, b, c.Decoded)
				}
				checked++
			}
			if checked < 10 {
				t.Fatalf("only %d golden texts checked", checked)
			}
		})
	}
}

// A character split between tokens: each token holds only part of it, and
// the parts join to the character. Byte-level BPE splits rare characters
// into byte tokens; SentencePiece's byte fallback spells them as <0xXX>.
func TestTokenBytesSplitCharacters(t *testing.T) {
	const text = "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ 𓀀"
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			tk := load(t, f.fixture)
			ids := tk.Encode(text, false)
			var b []byte
			partial := 0
			for _, id := range ids {
				tb, err := tk.TokenBytes(id)
				if err != nil {
					t.Fatal(err)
				}
				if !utf8.Valid(tb) {
					partial++
				}
				b = append(b, tb...)
			}
			want := tk.Decode(ids, false)
			if string(b) != want || !utf8.Valid(b) {
				t.Errorf("joined %q, decoded %q", b, want)
			}
			if partial == 0 {
				t.Errorf("no token of %q holds a partial character (ids %v): the test proves nothing", text, ids)
			}
		})
	}
}

func TestTokenBytesSpecialAndBadIDs(t *testing.T) {
	tk := load(t, fixtures.Llama3)
	id, ok := tk.TokenID("<|eot_id|>")
	if !ok {
		t.Fatal("no <|eot_id|>")
	}
	if b, err := tk.TokenBytes(id); err != nil || string(b) != "<|eot_id|>" {
		t.Errorf("TokenBytes(eot) = %q, %v", b, err)
	}
	if _, err := tk.TokenBytes(-1); err == nil {
		t.Error("id -1: no error")
	}
	if _, err := tk.TokenBytes(tk.VocabSize()); err == nil {
		t.Error("id past the vocabulary: no error")
	}
}

func TestTokenBytesDecoders(t *testing.T) {
	mk := func(decoder string) *Tokenizer {
		t.Helper()
		js := `{"model":{"type":"BPE","vocab":{"▁a":0,"b":1,"<0xE2>":2,"##c":3},"merges":[]},"decoder":` + decoder + `}`
		tk, err := Parse([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	tk := mk(`{"type":"Metaspace","replacement":"▁","prepend_scheme":"always"}`)
	if b, _ := tk.TokenBytes(0); string(b) != " a" {
		t.Errorf("Metaspace: %q, want the space kept mid-text", b)
	}
	tk = mk(`{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}`)
	if b, _ := tk.TokenBytes(0); string(b) != " a" {
		t.Errorf("Strip after Fuse: %q, want the space kept mid-text", b)
	}
	if b, _ := tk.TokenBytes(2); !bytes.Equal(b, []byte{0xE2}) {
		t.Errorf("ByteFallback: %q", b)
	}
	tk = mk(`{"type":"WordPiece","prefix":"##"}`)
	var e *TokenBytesError
	if _, err := tk.TokenBytes(3); !errors.As(err, &e) || e.Decoder != "WordPiece" {
		t.Errorf("WordPiece: %v, want a TokenBytesError", err)
	}
}
