// Package tokenizer reads Hugging Face tokenizer.json files and encodes and
// decodes text exactly as the Hugging Face tokenizers library does, in pure
// Go, for the BPE families that ExecuTorch's MLX examples export: byte-level
// BPE (Llama 3, Qwen 2/3, GPT-2 style) and SentencePiece-style BPE with "▁"
// and byte fallback (Gemma, Llama 2, Mistral style).
//
// Supported components: the BPE model (merges as "a b" strings or pairs,
// ignore_merges, unk_token with fuse_unk, byte_fallback,
// continuing_subword_prefix, end_of_word_suffix); the normalizers NFC, NFD,
// NFKC, NFKD, Lowercase, Replace, Prepend, Strip, StripAccents,
// BertNormalizer, ByteLevel and Sequence; the pre-tokenizers Split (any
// Oniguruma-style pattern: the well-known GPT-2 / cl100k / Qwen patterns
// are scanned by hand-written code, others by a small backtracking engine),
// ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation,
// CharDelimiterSplit, BertPreTokenizer and Sequence; added tokens with
// their special/lstrip/rstrip/single_word/normalized flags; the
// post-processors TemplateProcessing, ByteLevel, RobertaProcessing,
// BertProcessing and Sequence; and the decoders ByteLevel, ByteFallback,
// Fuse, Strip, Replace, Metaspace, BPEDecoder, WordPiece and Sequence. A
// component of another type is an error, naming it, at load. Truncation and
// padding settings are ignored.
//
// A Tokenizer is safe for concurrent use.
package tokenizer

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Tokenizer is a loaded tokenizer.json.
type Tokenizer struct {
	model     *bpe
	norm      normalizer
	pre       preTokenizer
	post      *postProcessor
	dec       decodeStep
	decHasBF  bool   // the decoder uses ByteFallback
	decRaw    []byte // the decoder's JSON, for TokenBytes' byte chain
	bytesOnce sync.Once
	bytes     *byteChain
	added     []AddedToken
	addedByID map[int]int    // id -> index in added
	addedIDs  map[string]int // content -> id
	special   map[string]bool
	idTok     []string // id -> token string as decode sees it, all ids
	rawTrie   *trie
	normTrie  *trie
	vocabSize int
}

// Load reads a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	data, release, err := readFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(data)
	release()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse reads the contents of a tokenizer.json file.
func Parse(data []byte) (*Tokenizer, error) {
	// The model's vocabulary and merges are most of the file: they are
	// read during the one scan of it, the merges (at the first "merges":
	// [ of the file, most likely the model's) on another core from the
	// start, and used if the scan finds them where this guessed.
	var spec struct {
		start, end int
		pairs      *mergePairs
		err        error
		done       chan struct{}
	}
	spec.start = -1
	for from := 0; from < len(data); {
		g := bytes.Index(data[from:], []byte(`"merges"`))
		if g < 0 {
			break
		}
		g += from
		from = g + 1
		i := skipWS(data, g+len(`"merges"`))
		if i >= len(data) || data[i] != ':' {
			continue
		}
		if s := skipWS(data, i+1); s < len(data) && data[s] == '[' {
			spec.start, spec.done = s, make(chan struct{})
			go func() {
				defer close(spec.done)
				spec.pairs, spec.end, spec.err = parseMergePairs(data, s)
			}()
			defer func() { <-spec.done }()
		}
		break
	}
	pre := &preModel{}
	hook := func(key string, d []byte, s int) (int, bool) {
		switch {
		case key == "vocab" && !pre.vocabSet && s < len(d) && d[s] == '{':
			hint := len(d) - s
			if spec.start > s {
				hint = spec.start - s
			}
			var end int
			pre.vocab, pre.idToTok, end, pre.vocabErr = parseVocabAt(d, s, hint)
			pre.vocabSet = true
			return end, pre.vocabErr == nil
		case key == "merges" && !pre.mergesSet && s < len(d) && d[s] == '[':
			var end int
			if s == spec.start {
				<-spec.done
				pre.pairs, end, pre.mergesErr = spec.pairs, spec.end, spec.err
			} else {
				pre.pairs, end, pre.mergesErr = parseMergePairs(d, s)
			}
			pre.mergesSet = true
			return end, pre.mergesErr == nil
		}
		return 0, false
	}
	fs, _, err := objectFieldsHook(data, 0, "model", nil, hook)
	if err != nil {
		return nil, err
	}
	modelRaw := field(fs, "model")
	if isNull(modelRaw) {
		return nil, fmt.Errorf("tokenizer.json has no model")
	}
	t := &Tokenizer{addedByID: map[int]int{}, addedIDs: map[string]int{}, special: map[string]bool{}}
	// The model is most of the work: parse it while the rest is read.
	var wg sync.WaitGroup
	var modelErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		t.model, modelErr = parseModel(modelRaw, subFields(fs, "model"), pre)
	}()
	defer wg.Wait()
	if t.norm, err = parseNormalizer(field(fs, "normalizer")); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(field(fs, "pre_tokenizer")); err != nil {
		return nil, err
	}
	decRaw := field(fs, "decoder")
	if t.dec, err = parseDecoder(decRaw); err != nil {
		return nil, err
	}
	t.decHasBF = hasByteFallback(decRaw)
	t.decRaw = bytes.Clone(decRaw)
	if raw := field(fs, "added_tokens"); !isNull(raw) {
		if err := jsonUnmarshal(raw, &t.added); err != nil {
			return nil, fmt.Errorf("added_tokens: %w", err)
		}
	}
	wg.Wait()
	if modelErr != nil {
		return nil, modelErr
	}
	t.post, err = parsePostProcessor(field(fs, "post_processor"))
	if err != nil {
		return nil, err
	}
	maxID := len(t.model.idToTok) - 1
	for i, a := range t.added {
		if a.ID < 0 || a.ID >= maxTokenID {
			return nil, fmt.Errorf("added_tokens: %q has id %d, out of range", a.Content, a.ID)
		}
		if a.Content == "" {
			continue
		}
		maxID = max(maxID, a.ID)
		t.addedByID[a.ID] = i
		t.addedIDs[a.Content] = a.ID
		if a.Special {
			t.special[a.Content] = true
		}
	}
	if maxID >= sparseLimit(t.model.vocab.len()+len(t.added)) {
		return nil, fmt.Errorf("added_tokens: highest id %d: ids too sparse", maxID)
	}
	t.vocabSize = maxID + 1
	// idTok shares the model's table (its added ids are overwritten, which
	// Token allows for by looking at added tokens first).
	t.idTok = t.model.idToTok
	if n := t.vocabSize - len(t.idTok); n > 0 {
		if t.vocabSize <= cap(t.idTok) {
			t.idTok = t.idTok[:t.vocabSize] // the rest is zero
		} else {
			t.idTok = append(t.idTok, make([]string, n)...)
		}
	}
	for i, a := range t.added {
		if a.Content == "" {
			continue
		}
		c := a.Content
		if a.Normalized && t.norm != nil {
			c = t.norm(c)
		}
		t.idTok[a.ID] = c
		tr := &t.rawTrie
		if a.Normalized {
			tr = &t.normTrie
		}
		if *tr == nil {
			*tr = newTrie()
		}
		(*tr).add(c, i)
	}
	if t.post != nil {
		for _, id := range append(append([]int{}, t.post.prefix...), t.post.suffix...) {
			if id < 0 || id >= t.vocabSize {
				return nil, fmt.Errorf("post_processor: token id %d is outside the vocabulary", id)
			}
		}
	}
	return t, nil
}

// VocabSize is the highest token id plus one, added tokens included.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// Token returns the string of a token id (an added token's content, or the
// model's vocabulary entry, e.g. "Ġhello" or "▁hello").
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= len(t.idTok) {
		return "", false
	}
	if _, ok := t.addedByID[id]; ok {
		return t.idTok[id], true
	}
	if id < len(t.model.idToTok) {
		s := t.model.idToTok[id]
		if s != "" {
			return s, true
		}
		if v, ok := t.model.vocab.get(""); ok && v == id {
			return "", true
		}
	}
	return "", false
}

// TokenID returns the id of a token string (added tokens first).
func (t *Tokenizer) TokenID(s string) (int, bool) {
	if id, ok := t.addedIDs[s]; ok {
		return id, true
	}
	id, ok := t.model.vocab.get(s)
	return id, ok
}

// IsSpecial reports whether id is a special added token (one that
// skip-special decoding drops).
func (t *Tokenizer) IsSpecial(id int) bool {
	s, ok := t.Token(id)
	return ok && t.special[s]
}

// AddedTokens returns a copy of the added tokens.
func (t *Tokenizer) AddedTokens() []AddedToken {
	return append([]AddedToken(nil), t.added...)
}

// SpecialPrefix and SpecialSuffix are the ids that Encode with addSpecial
// puts around the text (from the post-processor, e.g. a BOS).
func (t *Tokenizer) SpecialPrefix() []int {
	if t.post == nil {
		return nil
	}
	return append([]int(nil), t.post.prefix...)
}

// SpecialSuffix: see SpecialPrefix.
func (t *Tokenizer) SpecialSuffix() []int {
	if t.post == nil {
		return nil
	}
	return append([]int(nil), t.post.suffix...)
}

var (
	bosNames = []string{"<|begin_of_text|>", "<bos>", "<s>", "<|startoftext|>", "[BOS]"}
	eosNames = []string{"<|end_of_text|>", "<eos>", "</s>", "<|endoftext|>", "[EOS]"}
)

// BOS returns the beginning-of-sequence token: the one the post-processor
// puts first, otherwise a special token with a well-known BOS name.
// tokenizer_config.json, where present, is the better authority.
func (t *Tokenizer) BOS() (int, bool) {
	if t.post != nil && len(t.post.prefix) > 0 {
		return t.post.prefix[0], true
	}
	return t.specialNamed(bosNames)
}

// EOS returns the end-of-sequence token: the one the post-processor puts
// last, otherwise a special token with a well-known EOS name. Chat models
// often stop on another token too (e.g. <|eot_id|>, <|im_end|>,
// <end_of_turn>): see tokenizer_config.json / generation_config.json.
func (t *Tokenizer) EOS() (int, bool) {
	if t.post != nil && len(t.post.suffix) > 0 {
		return t.post.suffix[len(t.post.suffix)-1], true
	}
	return t.specialNamed(eosNames)
}

func (t *Tokenizer) specialNamed(names []string) (int, bool) {
	for _, n := range names {
		if id, ok := t.addedIDs[n]; ok && t.special[n] {
			return id, true
		}
	}
	return 0, false
}

// ---- encoding

// encodeState is per-call scratch.
type encodeState struct {
	ws    wordState
	cache map[string][]int
	arena []int // backing store of the cache's values, in fixed chunks
}

// keep copies ids into the arena.
func (st *encodeState) keep(ids []int) []int {
	if len(st.arena)+len(ids) > cap(st.arena) {
		st.arena = make([]int, 0, max(4096, len(ids)))
	}
	n := len(st.arena)
	st.arena = append(st.arena, ids...)
	return st.arena[n:len(st.arena):len(st.arena)]
}

// parallelMin is the input size above which the model runs on all cores.
const parallelMin = 64 << 10

// Encode returns the token ids of text. Added tokens' text in the input is
// matched as those tokens; addSpecial applies the post-processor (e.g. a
// BOS). Ill-formed UTF-8 in text is first replaced by U+FFFD.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	ids, _ := t.encode(text, addSpecial, 0, false)
	return ids
}

// EncodeTokens is Encode also returning the token strings, as HF's
// Encoding.tokens: vocabulary entries, and for an added token the text it
// matched (with the white space its lstrip/rstrip took).
func (t *Tokenizer) EncodeTokens(text string, addSpecial bool) (ids []int, tokens []string) {
	return t.encode(text, addSpecial, 0, true)
}

// encode is Encode; workers > 0 forces that many goroutines for the model
// (tests), 0 picks by input size; withTokens also returns token strings.
func (t *Tokenizer) encode(text string, addSpecial bool, workers int, withTokens bool) ([]int, []string) {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	// 1. added tokens in the raw text, 2. normalization, 3. added tokens in
	// the normalized text.
	segs := t.splitAdded(nil, segment{s: text, id: -1, first: true}, t.rawTrie)
	if t.norm != nil || t.normTrie != nil {
		var out []segment
		for _, sg := range segs {
			if sg.id >= 0 {
				out = append(out, sg)
				continue
			}
			if t.norm != nil {
				sg.s = t.norm(sg.s)
			}
			out = t.splitAdded(out, sg, t.normTrie)
		}
		segs = out
	}
	// 4. pre-tokenization; token segments become pieces with an id.
	// Generous capacities: growing a slice copies it and leaves garbage,
	// while capacity never used costs little.
	items := make([]piece, 0, len(text)/2+8)
	total := 0
	for _, sg := range segs {
		if sg.id >= 0 {
			items = append(items, piece{s: sg.s, added: int32(sg.id) + 1})
			continue
		}
		if sg.s == "" {
			continue
		}
		p := piece{s: sg.s, first: sg.first}
		total += len(p.s)
		if t.pre == nil {
			items = append(items, p)
			continue
		}
		items = t.pre(items, p)
	}
	// 5. the model, on all cores for long inputs.
	type result struct {
		ids  []int
		toks []string
	}
	run := func(items []piece) result {
		st := &encodeState{cache: make(map[string][]int, 1024)}
		n := 0
		for _, it := range items {
			n += len(it.s)
		}
		out := make([]int, 0, n/2+16)
		var toks []string
		for _, it := range items {
			if it.added > 0 {
				if withTokens {
					for len(toks) < len(out) {
						toks = append(toks, t.idTok[out[len(toks)]])
					}
					toks = append(toks, it.s)
				}
				out = append(out, int(it.added)-1)
				continue
			}
			if len(it.s) <= 64 {
				if c, ok := st.cache[it.s]; ok {
					out = append(out, c...)
					continue
				}
				n := len(out)
				out = t.model.tokenize(out, it, &st.ws)
				st.cache[it.s] = st.keep(out[n:])
				continue
			}
			out = t.model.tokenize(out, it, &st.ws)
		}
		if withTokens {
			for len(toks) < len(out) {
				toks = append(toks, t.idTok[out[len(toks)]])
			}
		}
		return result{out, toks}
	}
	if workers <= 0 {
		workers = 1
		if total >= parallelMin {
			workers = min(runtime.GOMAXPROCS(0), 8)
		}
	}
	workers = min(workers, len(items))
	var res result
	if workers < 2 {
		res = run(items)
	} else {
		parts := make([]result, workers)
		var wg sync.WaitGroup
		lo := 0
		per := total / workers
		for w := 0; w < workers; w++ {
			hi, acc := lo, 0
			if w == workers-1 {
				hi = len(items)
			} else {
				for hi < len(items) && acc < per {
					if items[hi].added == 0 {
						acc += len(items[hi].s)
					}
					hi++
				}
			}
			wg.Add(1)
			go func(w int, part []piece) {
				defer wg.Done()
				parts[w] = run(part)
			}(w, items[lo:hi])
			lo = hi
		}
		wg.Wait()
		n := 0
		for _, p := range parts {
			n += len(p.ids)
		}
		res.ids = make([]int, 0, n)
		for _, p := range parts {
			res.ids = append(res.ids, p.ids...)
			res.toks = append(res.toks, p.toks...)
		}
	}
	ids, toks := res.ids, res.toks
	if addSpecial && t.post != nil && (len(t.post.prefix) > 0 || len(t.post.suffix) > 0) {
		ids = slices.Concat(t.post.prefix, ids, t.post.suffix)
		if withTokens {
			var pre, suf []string
			for _, id := range t.post.prefix {
				pre = append(pre, t.idTok[id])
			}
			for _, id := range t.post.suffix {
				suf = append(suf, t.idTok[id])
			}
			toks = slices.Concat(pre, toks, suf)
		}
	}
	if withTokens && toks == nil {
		toks = []string{}
	}
	return ids, toks
}

// ---- decoding

// tokensFor maps ids to the token strings the decoder sees (unknown ids
// are dropped, special tokens too when skipSpecial), as HF's decode does.
func (t *Tokenizer) tokensFor(ids []int, skipSpecial bool) []string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		s, ok := t.Token(id)
		if !ok {
			continue
		}
		if skipSpecial && t.special[s] {
			continue
		}
		toks = append(toks, s)
	}
	return toks
}

func (t *Tokenizer) decodeTokens(toks []string) string {
	if t.dec == nil {
		return strings.Join(toks, " ")
	}
	return strings.Join(t.dec(toks), "")
}

// Decode returns the text of ids; skipSpecial drops special tokens. Ids
// outside the vocabulary are ignored.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) string {
	return t.decodeTokens(t.tokensFor(ids, skipSpecial))
}
