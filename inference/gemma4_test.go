package inference

import (
	"etchat/inference/engine"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// gemma4-tiny's multi-turn reference appends turn 2 to turn 1's cache the
// way run_llm_hf.cpp --interactive does (no turn end after a reply cut at
// 8 tokens, no re-rendering): turn2.input_ids is turn 1's 35 cells plus
// appended_ids.
type gemma4Ref struct {
	Cases     []refCase `json:"cases"`
	Multiturn struct {
		Turn1 struct {
			InputIDs     []int `json:"input_ids"`
			GeneratedIDs []int `json:"generated_ids"`
			Messages     []struct{ Role, Content string }
		} `json:"turn1"`
		Turn2 struct {
			UserMessage   string `json:"user_message"`
			AppendedIDs   []int  `json:"appended_ids"`
			StartPosition int    `json:"start_position"`
			InputIDs      []int  `json:"input_ids"`
			CacheIDs      []int  `json:"cache_ids_after_turn1"`
			GeneratedIDs  []int  `json:"generated_ids"`
		} `json:"turn2"`
	} `json:"multiturn"`
	LongDecode struct {
		InputIDs  []int `json:"input_ids"`
		GreedyIDs []int `json:"greedy_ids"`
	} `json:"long_decode"`
}

// heavyGemma4 skips what CI's -race run does not need twice: the race
// detector makes gemma4-tiny's 262k-row per-layer embedding and lm head
// 14× slower on the CPU engine. Its reference cases, turn 2 from its input
// ids and the decode to capacity at fp32 still run there.
func heavyGemma4(t *testing.T) {
	t.Helper()
	if testing.Short() || raceEnabled {
		t.Skip("gemma4-tiny: slow under -race/-short; runs without them")
	}
}

// gemma4Chat is the fixture's chat setup with --chat gemma4: the stand-in
// tokenizer's tokenizer_config.json carries gemma3's template, which auto
// would take (the model's own template wins).
func gemma4Chat(t *testing.T) *Chat {
	t.Helper()
	dir := fixtures.Unpacked(t, fixtures.Gemma4)
	info, _ := fixtureConfig(t, fixtures.Gemma4, "fp32")
	chat, err := LoadChat(filepath.Join(dir, "tokenizer.json"), dir, "gemma4", info.EOSIDs)
	if err != nil {
		t.Fatal(err)
	}
	if chat.TemplateName != "gemma4" {
		t.Fatalf("template %q", chat.TemplateName)
	}
	return chat
}

// Turn 2's ids from turn 2's input ids, through the generation loop, on
// both engines: as one prompt (a fresh cache), and as the runner feeds it,
// appended to turn 1's cache at position 35.
func TestGemma4TurnsFromInputIDs(t *testing.T) {
	var ref gemma4Ref
	fixtures.Reference(t, fixtures.Gemma4, &ref)
	mt := ref.Multiturn
	forEachEngine(t, func(t *testing.T, e engine.Engine) {
		s, cfg := openOn(t, e, fixtures.Gemma4, "fp32")
		gen := Options{MaxNewTokens: 8, IgnoreEOS: true, PrefillChunk: cfg.MaxWrite}
		res, err := Generate(bg, s, mt.Turn2.InputIDs, gen)
		if err != nil || !slices.Equal(res.GeneratedIDs, mt.Turn2.GeneratedIDs) {
			t.Fatalf("turn 2 from its input ids: %v (%v), want %v", res.GeneratedIDs, err, mt.Turn2.GeneratedIDs)
		}
		if raceEnabled {
			return // the runner's way below doubles the cost, 14× under -race
		}
		if err := s.Clear(); err != nil {
			t.Fatal(err)
		}
		r1, err := Generate(bg, s, mt.Turn1.InputIDs, gen)
		if err != nil || !slices.Equal(r1.GeneratedIDs, mt.Turn1.GeneratedIDs) {
			t.Fatalf("turn 1: %v (%v), want %v", r1.GeneratedIDs, err, mt.Turn1.GeneratedIDs)
		}
		// The loop feeds every reply token, the last too; turn 2 follows.
		if s.Len() != mt.Turn2.StartPosition {
			t.Fatalf("Len %d after turn 1, want %d", s.Len(), mt.Turn2.StartPosition)
		}
		r2, err := Generate(bg, s, mt.Turn2.AppendedIDs, gen)
		if err != nil || !slices.Equal(r2.GeneratedIDs, mt.Turn2.GeneratedIDs) {
			t.Errorf("turn 2 appended: %v (%v), want %v", r2.GeneratedIDs, err, mt.Turn2.GeneratedIDs)
		}
	})
}

// etchat's conversation is the template's rendering of the transcript
// (docs/cpu-engine.md, "Gemma 4"): after a reply it puts what the template
// renders there, gemma4's <turn|>, even when the reply was cut by the
// token limit. The reference's runner appends turn 2 without it, so turn 2
// here has its own input: the rendering of [user, reply text, user], and
// its ids are what a fresh prefill of that input gives. Then undo turn,
// send again, regenerate, edit, undo N and a branch back give the same.
func TestGemma4ConversationTurnEnd(t *testing.T) {
	heavyGemma4(t)
	var ref gemma4Ref
	fixtures.Reference(t, fixtures.Gemma4, &ref)
	mt := ref.Multiturn
	chat := gemma4Chat(t)
	// With the stand-in tokenizer <turn|> is three ordinary pieces: there is
	// no turn-end id to commit, and EOS (1) stops.
	if len(chat.TurnEndIDs) != 0 {
		t.Errorf("turn-end ids %v from a tokenizer without <turn|>", chat.TurnEndIDs)
	}
	sess, _, cfg := openFixture(t, fixtures.Gemma4)
	opts := Options{MaxNewTokens: 8, IgnoreEOS: true, StopIDs: chat.StopIDs, TurnEndIDs: chat.TurnEndIDs, PrefillChunk: cfg.MaxWrite}
	c, err := NewConversation(sess, ConversationOptions{Tokenizer: chat.Tokenizer, Template: chat.Template, Cache: cfg, Generation: opts})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := c.Send(bg, mt.Turn1.Messages[0].Content, nil)
	if err != nil || !slices.Equal(r1.GeneratedIDs, mt.Turn1.GeneratedIDs) || !slices.Equal(c.CacheIDs(), mt.Turn2.CacheIDs) {
		t.Fatalf("turn 1: %v (%v), cache %v; want %v, %v", r1.GeneratedIDs, err, c.CacheIDs(), mt.Turn1.GeneratedIDs, mt.Turn2.CacheIDs)
	}
	afterTurn1 := c.CacheIDs()

	// What turn 2's cache must start with: the reply keeps the ids it was
	// generated as (the runner's multi-turn semantics), so turn 1's cache
	// and then the template's rendering after the reply's text (its turn
	// end and turn 2's user turn).
	reply := c.Messages()[1].Text
	text, err := chat.Template.Render([]Message{{Role: RoleUser, Text: mt.Turn1.Messages[0].Content},
		{Role: RoleAssistant, Text: reply}, {Role: RoleUser, Text: mt.Turn2.UserMessage}}, true)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(text, reply)
	if at < 0 {
		t.Fatalf("the rendering %q does not hold the reply %q", text, reply)
	}
	rest, err := chat.Tokenizer.Encode(text[at+len(reply):], false)
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(afterTurn1), rest...)
	r2, err := c.Send(bg, mt.Turn2.UserMessage, nil)
	if err != nil {
		t.Fatal(err)
	}
	cache := c.CacheIDs()
	if !slices.Equal(cache[:len(want)], want) || r2.Reused != commonPrefix(afterTurn1, want) {
		t.Fatalf("turn 2 cache %v\nwant the rendering %v (reused %d)", cache, want, r2.Reused)
	}
	// 66 cells = turn 1's 35 (kept whole: nothing is rewound; re-encoding
	// the reply's text would give 9 ids for its 8) and the rendering's 23
	// after the reply ("<turn|>" and turn 2's user turn), then the 8 new
	// ids.
	if r2.Reused != len(afterTurn1) || len(want) != 58 || len(cache) != 66 || sess.Len() != 66 {
		t.Errorf("reused %d, rendering %d ids, cache %d, session %d; want 35, 58, 66, 66", r2.Reused, len(want), len(cache), sess.Len())
	}
	// The same input fed at once gives the same ids.
	fresh, _, _ := openFixture(t, fixtures.Gemma4)
	f, err := Generate(bg, fresh, want, opts)
	if err != nil || !slices.Equal(f.GeneratedIDs, r2.GeneratedIDs) {
		t.Fatalf("turn 2 %v; a fresh prefill of its input gives %v (%v)", r2.GeneratedIDs, f.GeneratedIDs, err)
	}
	turn2 := r2.GeneratedIDs

	// Undo turn 2, then send, regenerate and edit-and-resend it again.
	u, err := c.UndoTurn(bg)
	if err != nil || u.Len != c.Messages()[1].End() {
		t.Fatalf("undo turn: %+v (%v)", u, err)
	}
	for step, do := range []func() (*Reply, error){
		func() (*Reply, error) { return c.Send(bg, mt.Turn2.UserMessage, nil) },
		func() (*Reply, error) { return c.Regenerate(bg, nil) },
		func() (*Reply, error) { return c.EditLast(bg, mt.Turn2.UserMessage, nil) },
	} {
		r, err := do()
		if err != nil || !slices.Equal(r.GeneratedIDs, turn2) {
			t.Errorf("step %d: %v (%v), want %v", step, r.GeneratedIDs, err, turn2)
		}
		if !slices.Equal(c.CacheIDs(), cache) || sess.Len() != len(cache) {
			t.Errorf("step %d: cache %v, want %v", step, c.CacheIDs(), cache)
		}
	}
	// Undo 3 tokens of the reply: the cache keeps the rest (the rings still
	// hold what the rewind needs), and regenerating continues exactly.
	u, err = c.UndoTokens(bg, 3)
	if err != nil || u.Len != len(cache)-3 || sess.Len() != len(cache)-3 || !slices.Equal(c.CacheIDs(), cache[:len(cache)-3]) {
		t.Fatalf("undo 3: %+v (%v), session %d", u, err, sess.Len())
	}
	// A branch back to the first version of turn 2: the transcript switches
	// and the cache follows it.
	if _, err := c.Switch(bg, c.Messages()[:2]); err != nil {
		t.Fatal(err)
	}
	if got := c.CacheIDs(); !slices.Equal(got, cache[:len(got)]) || sess.Len() != len(got) || len(c.Messages()) != 2 {
		t.Errorf("switch to turn 1: cache %v (%d messages)", got, len(c.Messages()))
	}
	if r, err := c.Send(bg, mt.Turn2.UserMessage, nil); err != nil || !slices.Equal(r.GeneratedIDs, turn2) {
		t.Errorf("turn 2 after the switch: %v (%v), want %v", r.GeneratedIDs, err, turn2)
	}
}

// The two engines token for token on gemma4-tiny's decode to capacity
// (128 cells, the rings wrapping 8 times), at fp32 against the reference
// and at bf16 against each other; then each cache rewound once, within the
// ring rule, continues as the uninterrupted run did.
func TestGemma4EnginesAgreeToCapacity(t *testing.T) {
	var ref gemma4Ref
	fixtures.Reference(t, fixtures.Gemma4, &ref)
	ld := ref.LongDecode
	for _, dt := range []string{"fp32", "bf16"} {
		t.Run(dt, func(t *testing.T) {
			if dt != "fp32" {
				heavyGemma4(t)
			}
			got := map[string][]int{}
			forEachEngine(t, func(t *testing.T, e engine.Engine) {
				s, cfg := openOn(t, e, fixtures.Gemma4, dt)
				first := prefillChunks(t, s, ld.InputIDs, cfg.MaxWrite)
				ids := greedy(t, s, first, s.Capacity()-s.Len()+1)
				if s.Len() != s.Capacity() || s.Capacity() != 128 {
					t.Fatalf("decoded to %d of %d", s.Len(), s.Capacity())
				}
				if dt == "fp32" && !slices.Equal(ids[:len(ld.GreedyIDs)], ld.GreedyIDs) {
					t.Errorf("fp32: %v, want %v", ids, ld.GreedyIDs)
				}
				got[e.Name()] = ids
				// Rewind to the ring floor (128 - 15 + 7) and decode again.
				k := s.Capacity() - 8
				if err := s.Rewind(k); err != nil {
					t.Fatal(err)
				}
				if err := s.Rewind(k - 1); err == nil {
					t.Error("a rewind below the ring floor was accepted")
				}
				n := k - len(ld.InputIDs) // generated ids still in the cache
				again := greedy(t, s, prefillChunks(t, s, ids[n:n+1], 1), len(ids)-n-1)
				if !slices.Equal(again, ids[n+1:]) {
					t.Errorf("after the rewind to %d: %v, want %v", k, again, ids[n+1:])
				}
			})
			agree(t, got)
		})
	}
}
