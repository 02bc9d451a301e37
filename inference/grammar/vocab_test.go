package grammar

import (
	"sync"
	"testing"

	"etchat/inference/tokenizer"
	"etchat/internal/fixtures"
)

var (
	tokMu  sync.Mutex
	tokens = map[string]*tokenizer.Tokenizer{}
	vocabs = map[string]*Vocab{}
)

func load(tb testing.TB, fixture string) (*tokenizer.Tokenizer, *Vocab) {
	tb.Helper()
	tokMu.Lock()
	defer tokMu.Unlock()
	if tk, ok := tokens[fixture]; ok {
		return tk, vocabs[fixture]
	}
	tk, err := tokenizer.Load(fixtures.Tokenizer(tb, fixture))
	if err != nil {
		tb.Fatal(err)
	}
	v, err := NewVocab(tk)
	if err != nil {
		tb.Fatal(err)
	}
	tokens[fixture], vocabs[fixture] = tk, v
	return tk, v
}

var families = []struct{ name, fixture, eot string }{
	{"llama3", fixtures.Llama3, "<|eot_id|>"},
	{"gemma3", fixtures.Gemma3, "<end_of_turn>"},
	{"qwen3", fixtures.Qwen3, "<|im_end|>"},
}

// The mask is exactly the tokens whose bytes, fed one by one, the grammar
// accepts: checked by brute force over the whole vocabulary in states met
// along a JSON text that the tokenizer splits its own way (partial
// characters included).
func TestMaskIsBruteForce(t *testing.T) {
	g, err := Parse(jsonGBNF)
	if err != nil {
		t.Fatal(err)
	}
	const text = `{"név": ["😀 x", 12.5e3, true], "b": null}`
	fams := families
	if testing.Short() || raceEnabled {
		fams = fams[:1] // the brute force over 262k tokens is slow under the race detector
	}
	for _, f := range fams {
		t.Run(f.name, func(t *testing.T) {
			tk, v := load(t, f.fixture)
			eot, _ := tk.TokenID(f.eot)
			mt := NewMatcher(g, v, []int{eot})
			ids := tk.Encode(text, false)
			for i, id := range append(ids, eot) {
				mask := mt.Mask()
				if i%3 == 0 || i == len(ids) {
					checkMask(t, mt, v, mask, eot)
				}
				if !mt.Allowed(id) {
					t.Fatalf("token %d (%q) of the text refused after %d tokens", id, v.Bytes(id), i)
				}
				if err := mt.Accept(id); err != nil {
					t.Fatal(err)
				}
			}
			if !mt.Done() || Count(mt.Mask()) != 0 {
				t.Error("not done after the end of turn")
			}
			if err := mt.Accept(ids[0]); err != ErrComplete {
				t.Errorf("accept after done: %v", err)
			}
		})
	}
}

func checkMask(t *testing.T, mt *Matcher, v *Vocab, mask []uint64, eot int) {
	t.Helper()
	m := mt.m
	n := 0
	for id := 0; id < v.Size(); id++ {
		want := false
		if b := v.Bytes(id); len(b) > 0 {
			s := mt.state
			for _, c := range b {
				if s = m.step(s, c); s < 0 {
					break
				}
			}
			want = s >= 0
		} else if id == eot {
			want = mt.CanEnd()
		}
		if got := mask[id>>6]&(1<<(id&63)) != 0; got != want {
			t.Fatalf("token %d (%q): mask %v, brute force %v", id, v.Bytes(id), got, want)
		}
		if want {
			n++
		}
	}
	if n == 0 {
		t.Fatal("nothing allowed")
	}
}

func TestAcceptRefuses(t *testing.T) {
	g, err := Parse(`root ::= "{" [a-z]+ "}"`)
	if err != nil {
		t.Fatal(err)
	}
	tk, v := load(t, fixtures.Llama3)
	eot, _ := tk.TokenID("<|eot_id|>")
	mt := NewMatcher(g, v, []int{eot})
	var re *RejectedError
	if err := mt.Accept(eot); err == nil || !asRejected(err, &re) {
		t.Errorf("end of turn before the grammar may end: %v", err)
	}
	x := tk.Encode("x", false)[0]
	if err := mt.Accept(x); err == nil {
		t.Error("x accepted before {")
	}
	for _, id := range tk.Encode("{abc}", false) {
		if err := mt.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	if !mt.CanEnd() || Count(mt.Mask()) != 1 || !mt.Allowed(eot) {
		t.Errorf("after the sentence: can end %v, %d allowed", mt.CanEnd(), Count(mt.Mask()))
	}
}

func asRejected(err error, re **RejectedError) bool {
	r, ok := err.(*RejectedError)
	*re = r
	return ok
}
