package tokenizer

import (
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"etchat/internal/fuzzing"
)

// allocBound is the most Parse may allocate for an n-byte tokenizer.json:
// the vocabulary and merge tables are each a small multiple of the text,
// and ids may be sparse up to sparseLimit's 65,536 spare slots (16 bytes
// each, twice over while the table grows): 4 MiB whatever the size.
func allocBound(n int) uint64 { return 4<<20 + 64*uint64(n) }

func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// tinyVocab is a byte-level vocabulary of a few tokens and merges.
var tinyVocab = obj{"h": 0, "e": 1, "l": 2, "o": 3, "Ġ": 4, "w": 5, "r": 6, "d": 7, "he": 8, "ll": 9, "hell": 10,
	"hello": 11, "Ġw": 12, "Ġwor": 13, "or": 14, "1": 15, "2": 16, "!": 17}

var tinyMerges = []string{"h e", "l l", "he ll", "hell o", "o r", "Ġw or"}

// seedTokenizer is a small byte-level BPE tokenizer.json with one
// component replaced (key → value; nil deletes it).
func seedTokenizer(set obj) []byte {
	t := obj{
		"version":        "1.0",
		"added_tokens":   []obj{{"id": 18, "content": "<|end|>", "special": true}},
		"normalizer":     nil,
		"pre_tokenizer":  obj{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"post_processor": obj{"type": "ByteLevel", "trim_offsets": false},
		"decoder":        obj{"type": "ByteLevel"},
		"model":          obj{"type": "BPE", "vocab": tinyVocab, "merges": tinyMerges},
	}
	for k, v := range set {
		t[k] = v
	}
	b, err := json.Marshal(t)
	if err != nil {
		panic(err)
	}
	return b
}

// sentencePiece is a Llama 2 / Gemma style tokenizer.json in little: "▁"
// for spaces, byte fallback for a few bytes, unk fused, BOS by template.
func sentencePiece() []byte {
	vocab := obj{"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "<0xC3>": 4, "<0xA9>": 5, "▁": 6, "h": 7, "e": 8,
		"l": 9, "o": 10, "▁h": 11, "ll": 12, "▁he": 13, "llo": 14, "▁hello": 15}
	return seedTokenizer(obj{
		"added_tokens": []obj{{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true},
			{"id": 2, "content": "</s>", "special": true}},
		"normalizer": obj{"type": "Sequence", "normalizers": []obj{{"type": "Prepend", "prepend": "▁"},
			{"type": "Replace", "pattern": obj{"String": " "}, "content": "▁"}}},
		"pre_tokenizer": nil,
		"post_processor": obj{"type": "TemplateProcessing",
			"single":         []obj{{"SpecialToken": obj{"id": "<s>", "type_id": 0}}, {"Sequence": obj{"id": "A", "type_id": 0}}},
			"pair":           []obj{},
			"special_tokens": obj{"<s>": obj{"id": "<s>", "ids": []int{1}, "tokens": []string{"<s>"}}}},
		"decoder": obj{"type": "Sequence", "decoders": []obj{{"type": "Replace", "pattern": obj{"String": "▁"}, "content": " "},
			{"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}}},
		"model": obj{"type": "BPE", "vocab": vocab, "merges": [][]string{{"▁", "h"}, {"l", "l"}, {"▁h", "e"}, {"ll", "o"}, {"▁he", "llo"}},
			"unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true, "ignore_merges": false},
	})
}

// tokenizerSeeds are small tokenizer.json files (under 1.5 KB each): byte-level
// BPE, SentencePiece-style BPE, added tokens with every flag, each
// normalizer, pre-tokenizer, post-processor and decoder kind, and model
// options. Real tokenizers (MBs) are regression tests, not seeds.
func tokenizerSeeds() [][]byte {
	seeds := [][]byte{seedTokenizer(nil), sentencePiece()}
	added := []obj{{"id": 18, "content": "<mask>", "lstrip": true, "special": true}, {"id": 19, "content": "<r>", "rstrip": true},
		{"id": 20, "content": "[x]", "single_word": true}, {"id": 21, "content": "Hey", "normalized": true},
		{"id": 22, "content": "<|s|>", "special": true}, {"id": 23, "content": "<|s|>x"}}
	seeds = append(seeds, seedTokenizer(obj{"added_tokens": added}))
	for _, n := range []obj{
		{"type": "NFC"}, {"type": "NFD"}, {"type": "NFKC"}, {"type": "NFKD"}, {"type": "Lowercase"}, {"type": "StripAccents"},
		{"type": "Strip", "strip_left": true, "strip_right": true}, {"type": "Prepend", "prepend": "▁"},
		{"type": "Replace", "pattern": obj{"Regex": "\\s+"}, "content": " "},
		{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		{"type": "ByteLevel"}, {"type": "Precompiled", "precompiled_charsmap": ""},
		{"type": "Sequence", "normalizers": []obj{{"type": "NFD"}, {"type": "StripAccents"}, {"type": "Lowercase"}}},
	} {
		seeds = append(seeds, seedTokenizer(obj{"normalizer": n}))
	}
	gpt2 := `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	for _, p := range []obj{
		{"type": "Split", "pattern": obj{"Regex": gpt2}, "behavior": "Isolated", "invert": false},
		{"type": "Split", "pattern": obj{"Regex": "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"}, "behavior": "Removed", "invert": true},
		{"type": "Split", "pattern": obj{"String": " "}, "behavior": "MergedWithPrevious"},
		{"type": "Split", "pattern": obj{"String": "l"}, "behavior": "MergedWithNext"},
		{"type": "Split", "pattern": obj{"Regex": "o+"}, "behavior": "Contiguous"},
		{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true},
		{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": false},
		{"type": "Digits", "individual_digits": true}, {"type": "Punctuation", "behavior": "Isolated"},
		{"type": "Whitespace"}, {"type": "WhitespaceSplit"}, {"type": "CharDelimiterSplit", "delimiter": "-"},
		{"type": "BertPreTokenizer"},
		{"type": "Sequence", "pretokenizers": []obj{{"type": "Split", "pattern": obj{"Regex": gpt2}, "behavior": "Isolated"},
			{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}}},
	} {
		seeds = append(seeds, seedTokenizer(obj{"pre_tokenizer": p}))
	}
	for _, p := range []obj{
		{"type": "RobertaProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 0}},
		{"type": "BertProcessing", "sep": []any{"[SEP]", 17}, "cls": []any{"[CLS]", 16}},
		{"type": "Sequence", "processors": []obj{{"type": "ByteLevel"}, {"type": "TemplateProcessing",
			"single":         []obj{{"SpecialToken": obj{"id": "<|end|>"}}, {"Sequence": obj{"id": "A"}}},
			"special_tokens": obj{"<|end|>": obj{"id": "<|end|>", "ids": []int{18}}}}}},
	} {
		seeds = append(seeds, seedTokenizer(obj{"post_processor": p}))
	}
	for _, d := range []obj{
		{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}, {"type": "BPEDecoder", "suffix": "</w>"},
		{"type": "WordPiece", "prefix": "##", "cleanup": true},
		{"type": "Sequence", "decoders": []obj{{"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": "h", "start": 1, "stop": 1}}},
	} {
		seeds = append(seeds, seedTokenizer(obj{"decoder": d}))
	}
	seeds = append(seeds,
		seedTokenizer(obj{"model": obj{"type": "BPE", "vocab": obj{"h": 0, "##e": 1, "l</w>": 2, "##l</w>": 3},
			"merges": []string{}, "continuing_subword_prefix": "##", "end_of_word_suffix": "</w>"}}),
		seedTokenizer(obj{"model": obj{"type": "BPE", "vocab": tinyVocab, "merges": tinyMerges, "ignore_merges": true}}),
		[]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"pre_tokenizer":{"type":"Split","pattern":{"Regex":"(a|b)*+"},"behavior":"Isolated"}}`),
	)
	return seeds
}

var fuzzTexts = []string{"hello world", "<|end|>hello  \n\n wor1d!", "héllo ▁x\t<s>", "HeLLo 12 🙂 [x] <mask> Hey",
	"", "a-b-c ab's '' 123456"}

// FuzzParse: any tokenizer.json either fails to parse with an error or
// gives a tokenizer whose Encode/Decode/stream work on any text, without a
// panic; Parse allocates at most allocBound(len(data)).
func FuzzParse(f *testing.F) {
	for i, b := range tokenizerSeeds() {
		f.Add(b, fuzzTexts[i%len(fuzzTexts)])
	}
	for _, b := range tokenizerSeeds()[:2] {
		f.Add(b[:len(b)/2], "x")
		f.Add([]byte(strings.Replace(string(b), `"type"`, `"typo"`, 1)), "y")
	}
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		defer fuzzing.Time(len(data) + len(text))()
		before := allocated()
		tk, err := Parse(data)
		if used := allocated() - before; used > allocBound(len(data)) {
			t.Fatalf("Parse of %d bytes allocated %d bytes (bound %d)", len(data), used, allocBound(len(data)))
		}
		if err != nil {
			return
		}
		ids := tk.Encode(text, true)
		for _, id := range ids {
			if id < 0 || id >= tk.VocabSize() {
				t.Fatalf("Encode(%q) gave id %d outside the %d-token vocabulary", text, id, tk.VocabSize())
			}
		}
		dec := tk.Decode(ids, false)
		if got, _ := streamAll(tk, ids, false); got != dec {
			t.Fatalf("stream of %q gives %q, Decode %q", text, got, dec)
		}
		tk.Decode([]int{-1, 0, 1, tk.VocabSize(), 1 << 40}, true)
	})
}

// FuzzEncode: on the fixture families' real tokenizers (loaded once per
// worker), adding specials changes only the ends, decode inverts encode
// (up to each family's normalisation) and streaming decodes the same text.
// Seeds are short (≤ 200 bytes): long strings make the fuzzer's quadratic
// minimiser stall.
func FuzzEncode(f *testing.F) {
	for _, s := range tricky {
		if len(s) <= 200 {
			f.Add(s)
		}
	}
	f.Add("")
	f.Add(mixedText(200))
	// Load before fuzzing starts: a worker must answer its first input
	// within seconds.
	tks := make([]*Tokenizer, len(families))
	for i, fam := range families {
		tks[i] = load(f, fam.fixture)
	}
	f.Fuzz(func(t *testing.T, s string) {
		defer fuzzing.Time(len(s))()
		for i, fam := range families {
			tk := tks[i]
			ids := tk.Encode(s, false)
			with := tk.Encode(s, true)
			if !slices.Equal(with, slices.Concat(tk.SpecialPrefix(), ids, tk.SpecialSuffix())) {
				t.Fatalf("%s: add_special changes more than the ends", fam.name)
			}
			if !utf8.ValidString(s) {
				continue
			}
			if got := tk.Decode(ids, false); got != roundTrip(fam.name, s) {
				t.Fatalf("%s: decode(encode(%q)) = %q", fam.name, s, got)
			}
			if got, _ := streamAll(tk, ids, false); got != tk.Decode(ids, false) {
				t.Fatalf("%s: stream of %q gives %q", fam.name, s, got)
			}
		}
	})
}

// FuzzScanners: the hand-written pre-tokenizer scanners agree with the
// general regex engine on any text.
func FuzzScanners(f *testing.F) {
	for _, s := range []string{"", "I'm here", "'S 'ſ 'RE 'll", "  \n\n  x", "123456 ٣٤٥", "a\u0301b", "x  \t\r\n y", "😀😀 !!\n", "\u00a0non\u00a0breaking"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		defer fuzzing.Time(len(s))()
		s = strings.ToValidUTF8(s, "\uFFFD")
		checkScanners(t, s)
	})
}

// The seeds must mostly parse (two are errors on purpose: Precompiled and
// the truncations), or the fuzzer starts from nothing.
func TestFuzzSeedsParse(t *testing.T) {
	for i, b := range tokenizerSeeds() {
		_, err := Parse(b)
		if err != nil && !strings.Contains(string(b), "Precompiled") {
			t.Errorf("seed %d (%d bytes): %v\n%s", i, len(b), err, b)
		}
		if len(b) > 1536 {
			t.Errorf("seed %d is %d bytes; keep seeds under 1.5 KB", i, len(b))
		}
	}
}

// TestMain bounds the fuzzer's minimisation when fuzzing (see
// fuzzing.MinimizeTime).
func TestMain(m *testing.M) { fuzzing.Main(m) }
