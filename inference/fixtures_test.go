package inference

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"etchat/inference/cpu"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/inference/sampler"
	"etchat/internal/fixtures"
)

type refCase struct {
	Kind      string    `json:"kind"`
	Prompt    string    `json:"prompt"`
	InputIDs  []int     `json:"input_ids"`
	GreedyIDs []int     `json:"greedy_ids"`
	Text      string    `json:"greedy_text"`
	Messages  []Message `json:"-"`
}

type refTurn struct {
	GeneratedIDs       []int `json:"generated_ids"`
	InputIDs           []int `json:"input_ids"`
	CacheIDsAfterTurn1 []int `json:"cache_ids_after_turn1"`
	CommonPrefixLen    int   `json:"common_prefix_len"`
	RewindTo           int   `json:"rewind_to"`
	TokensToPrefill    []int `json:"tokens_to_prefill_after_rewind"`
	Messages           []struct{ Role, Content string }
}

type reference struct {
	Cases     []refCase `json:"cases"`
	Multiturn struct {
		Turn1     refTurn `json:"turn1"`
		Turn2     refTurn `json:"turn2"`
		Assistant string  `json:"assistant_content_for_turn2"`
	} `json:"multiturn"`
}

// openFixture loads a fixture with the CPU engine, its chat setup (--chat
// auto) and its cache config (runner defaults, fp32 storage).
func openFixture(t *testing.T, name string) (*zeroFree, *Chat, *kvcache.Config) {
	t.Helper()
	dir := fixtures.Unpacked(t, name)
	info, err := modelinfo.Load(filepath.Join(dir, "model.pte"), modelinfo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// fp32 KV storage: the references are fp32, and qwen3's margins go
	// down to 3e-4, below what bf16 storage keeps.
	policy := kvcache.DefaultPolicy()
	policy.StorageDType = "fp32"
	cfg, err := info.CacheConfig(policy)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := cpu.New(cpu.Options{}).Open(bg, filepath.Join(dir, "model.pte"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	chat, err := LoadChat(filepath.Join(dir, "tokenizer.json"), dir, "auto", info.EOSIDs)
	if err != nil {
		t.Fatal(err)
	}
	return &zeroFree{sess}, chat, cfg
}

// zeroFree is a real session (the name says it is not the fake).
type zeroFree struct{ engine.Session }

// models leaves all but the first out under -race and -short: the race detector makes
// the 262k-vocabulary lm-head slow.
func models(all ...string) []string {
	if testing.Short() || raceEnabled {
		return all[:1]
	}
	return all
}

func TestFixtureGreedyThroughLoop(t *testing.T) {
	for _, name := range models(fixtures.Llama3, fixtures.Qwen3, fixtures.Gemma3, fixtures.Llama3Q4, fixtures.Qwen3Q8) {
		t.Run(name, func(t *testing.T) {
			var ref reference
			fixtures.Reference(t, name, &ref)
			sess, chat, cfg := openFixture(t, name)
			for i, c := range ref.Cases {
				if c.Kind != "raw" && i > 0 {
					continue // one chat case and the raw case keep the test quick
				}
				ids := c.InputIDs
				if c.Kind == "chat" {
					got, err := chat.Encode(c.Prompt)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, c.InputIDs) {
						t.Fatalf("case %d: encoded %v, want %v", i, got, c.InputIDs)
					}
				}
				if err := sess.Clear(); err != nil {
					t.Fatal(err)
				}
				var streamed strings.Builder
				res, err := Generate(bg, sess, ids, Options{MaxNewTokens: len(c.GreedyIDs), IgnoreEOS: true,
					StopIDs: chat.StopIDs, PrefillChunk: cfg.MaxWrite, Decoder: chat.Tokenizer,
					OnToken: func(tok Token) error { streamed.WriteString(tok.Text); return nil }})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(res.GeneratedIDs, c.GreedyIDs) {
					t.Errorf("case %d (%s): generated %v, want %v", i, c.Kind, res.GeneratedIDs, c.GreedyIDs)
				}
				if res.Text != c.Text || streamed.String() != c.Text {
					t.Errorf("case %d: text %q, streamed %q, want %q", i, res.Text, streamed.String(), c.Text)
				}
			}
		})
	}
}

func TestFixtureMultiturnConversation(t *testing.T) {
	// gemma3 first: its sliding windows make the undo re-prefill.
	for _, name := range models(fixtures.Gemma3, fixtures.Llama3, fixtures.Qwen3, fixtures.Llama3Q4, fixtures.Qwen3Q8) {
		t.Run(name, func(t *testing.T) {
			var ref reference
			fixtures.Reference(t, name, &ref)
			mt := ref.Multiturn
			sess, chat, cfg := openFixture(t, name)
			// The reference generates exactly 8 tokens a turn.
			opts := ConversationOptions{Tokenizer: chat.Tokenizer, Template: chat.Template, Cache: cfg,
				Generation: Options{MaxNewTokens: 8, IgnoreEOS: true, StopIDs: chat.StopIDs, TurnEndIDs: chat.TurnEndIDs, PrefillChunk: cfg.MaxWrite}}
			c, err := NewConversation(sess, opts)
			if err != nil {
				t.Fatal(err)
			}
			r1, err := c.Send(bg, mt.Turn1.Messages[0].Content, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r1.GeneratedIDs, mt.Turn1.GeneratedIDs) {
				t.Fatalf("turn 1: %v, want %v", r1.GeneratedIDs, mt.Turn1.GeneratedIDs)
			}
			if !slices.Equal(c.CacheIDs(), mt.Turn2.CacheIDsAfterTurn1) {
				t.Fatalf("cache after turn 1: %v, want %v", c.CacheIDs(), mt.Turn2.CacheIDsAfterTurn1)
			}
			if got := c.Messages()[1].Text; got != mt.Assistant {
				t.Errorf("assistant text %q, want %q", got, mt.Assistant)
			}
			// The reference decodes turn 1's reply and re-renders the
			// conversation: its history is given as text.
			replyAsText(t, c)
			instant := c.tracked.CanRewind(mt.Turn2.RewindTo)
			r2, err := c.Send(bg, mt.Turn2.Messages[2].Content, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r2.Reused != mt.Turn2.CommonPrefixLen || r2.Reprefilled == instant {
				t.Errorf("turn 2 reused %d (reprefilled %v, predicted instant %v), want common prefix %d", r2.Reused, r2.Reprefilled, instant, mt.Turn2.CommonPrefixLen)
			}
			if !slices.Equal(c.CacheIDs()[:len(mt.Turn2.InputIDs)], mt.Turn2.InputIDs) {
				t.Errorf("cache after turn 2 does not start with turn 2's input")
			}
			if !r2.Reprefilled && !slices.Equal(c.CacheIDs()[mt.Turn2.RewindTo:len(mt.Turn2.InputIDs)], mt.Turn2.TokensToPrefill) {
				t.Errorf("prefilled after rewind differs from tokens_to_prefill_after_rewind")
			}
			if !slices.Equal(r2.GeneratedIDs, mt.Turn2.GeneratedIDs) {
				t.Fatalf("turn 2: %v, want %v", r2.GeneratedIDs, mt.Turn2.GeneratedIDs)
			}

			// Undo turn 2 (gemma3's 8-token windows have overwritten what
			// the rewind needs: it re-prefills), then ask again: the same
			// tokens. Regenerate and edit-back give them too.
			predicted := c.CanUndoInstantly()
			u, err := c.UndoTurn(bg)
			if err != nil {
				t.Fatal(err)
			}
			// Undo keeps what the transcript shows: turn 1 as turn 2 rendered
			// it (the reply's text re-tokenized), up to where turn 2 began.
			if u.Reprefilled == predicted || u.Len != c.Messages()[1].End() || u.Len <= mt.Turn2.RewindTo ||
				!slices.Equal(c.CacheIDs(), mt.Turn2.InputIDs[:u.Len]) {
				t.Errorf("undo: %+v (predicted instant %v)", u, predicted)
			}
			if name == fixtures.Gemma3 && !u.Reprefilled {
				t.Errorf("gemma3 undo should need a re-prefill")
			}
			for step, do := range []func() (*Reply, error){
				func() (*Reply, error) { return c.Send(bg, mt.Turn2.Messages[2].Content, nil) },
				func() (*Reply, error) { return c.Regenerate(bg, nil) },
				func() (*Reply, error) { return c.EditLast(bg, mt.Turn2.Messages[2].Content, nil) },
			} {
				r, err := do()
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(r.GeneratedIDs, mt.Turn2.GeneratedIDs) {
					t.Errorf("step %d after undo: %v, want %v", step, r.GeneratedIDs, mt.Turn2.GeneratedIDs)
				}
			}
		})
	}
}

func TestOpenModelConversation(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	var ref reference
	fixtures.Reference(t, fixtures.Llama3, &ref)
	m, err := Load(bg, filepath.Join(dir, "model.pte"), LoadOptions{Engine: "cpu", Policy: kvcache.Policy{StorageDType: "fp32", InitialCapacity: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Engine.Name != "cpu" || m.Cache == nil || m.Cache.Capacity != 128 || m.PrefillChunk() != 32 || m.Chat == nil || len(m.Chat.TurnEndIDs) != 1 {
		t.Fatalf("model %+v", m)
	}
	gen := m.Generation(8, sampler.Sampling{})
	gen.IgnoreEOS = true
	c, err := m.NewConversation("", gen)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Send(bg, ref.Multiturn.Turn1.Messages[0].Content, nil)
	if err != nil || !slices.Equal(r.GeneratedIDs, ref.Multiturn.Turn1.GeneratedIDs) {
		t.Fatalf("turn 1 %v (%v), want %v", r.GeneratedIDs, err, ref.Multiturn.Turn1.GeneratedIDs)
	}
	// The stored state reopens on a fresh model and continues with turn 2's
	// reference tokens, given the reply as text, as the reference does.
	state := c.Messages()
	state[1].Generated = nil
	m2, err := Load(bg, filepath.Join(dir, "model.pte"), LoadOptions{Policy: kvcache.Policy{StorageDType: "fp32", InitialCapacity: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	c2, err := m2.ResumeConversation(bg, state, gen)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c2.Send(bg, ref.Multiturn.Turn2.Messages[2].Content, nil)
	if err != nil || !slices.Equal(r2.GeneratedIDs, ref.Multiturn.Turn2.GeneratedIDs) || r2.Reused != ref.Multiturn.Turn2.RewindTo {
		t.Errorf("resumed turn 2 %v reused %d (%v), want %v", r2.GeneratedIDs, r2.Reused, err, ref.Multiturn.Turn2.GeneratedIDs)
	}
	// A tokenizer of another model is refused before loading.
	if _, err := Load(bg, filepath.Join(dir, "model.pte"), LoadOptions{Tokenizer: fixtures.Tokenizer(t, fixtures.Qwen3)}); err == nil {
		t.Error("qwen3's tokenizer accepted for llama3")
	}
}

// The in-graph export of the same weights: generation through the loop,
// and a conversation whose rewinds the program cannot do (it re-prefills).
func TestInGraphModel(t *testing.T) {
	var ref reference
	fixtures.Reference(t, fixtures.Llama3, &ref)
	m, err := Load(bg, fixtures.PTE(fixtures.InGraph), LoadOptions{Engine: "cpu", Tokenizer: fixtures.Tokenizer(t, fixtures.Llama3)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Cache != nil || m.PrefillChunk() != 32 || m.Chat.TemplateName == "llama3" {
		t.Fatalf("in-graph: cache %v, chunk %d", m.Cache, m.PrefillChunk())
	}
	c := ref.Cases[0]
	gen := m.Generation(len(c.GreedyIDs), sampler.Sampling{})
	gen.IgnoreEOS = true
	res, err := Generate(bg, m.Session, c.InputIDs, gen)
	if err != nil || !slices.Equal(res.GeneratedIDs, c.GreedyIDs) {
		t.Fatalf("in-graph greedy %v (%v), want %v", res.GeneratedIDs, err, c.GreedyIDs)
	}
	gen.MaxNewTokens = 8
	conv, err := m.NewConversation("", gen)
	if err != nil {
		t.Fatal(err)
	}
	mt := ref.Multiturn
	if r, err := conv.Send(bg, mt.Turn1.Messages[0].Content, nil); err != nil || !slices.Equal(r.GeneratedIDs, mt.Turn1.GeneratedIDs) {
		t.Fatalf("turn 1: %v", err)
	}
	replyAsText(t, conv)
	r, err := conv.Send(bg, mt.Turn2.Messages[2].Content, nil)
	if err != nil || !r.Reprefilled || !slices.Equal(r.GeneratedIDs, mt.Turn2.GeneratedIDs) {
		t.Fatalf("turn 2 on in-graph: %v reprefilled %v (%v), want %v", r.GeneratedIDs, r.Reprefilled, err, mt.Turn2.GeneratedIDs)
	}
}

func TestChatStopSet(t *testing.T) {
	cases := []struct {
		name    string
		stop    []int // must all be in the stop set
		turnEnd int
	}{
		{fixtures.Llama3, []int{128001, 128009}, 128009},
		{fixtures.Qwen3, []int{151645, 151643}, 151645},
		{fixtures.Gemma3, []int{1, 106}, 106},
	}
	for _, c := range cases[:len(models(cases[0].name, cases[1].name, cases[2].name))] {
		dir := fixtures.Unpacked(t, c.name)
		chat, err := LoadChat(filepath.Join(dir, "tokenizer.json"), dir, "auto", nil)
		if err != nil {
			t.Fatal(err)
		}
		set := map[int]bool{}
		for _, id := range chat.StopIDs {
			set[id] = true
		}
		for _, id := range c.stop {
			if !set[id] {
				t.Errorf("%s: stop set %v lacks %d", c.name, chat.StopIDs, id)
			}
		}
		if len(chat.TurnEndIDs) != 1 || chat.TurnEndIDs[0] != c.turnEnd || chat.Template == nil {
			t.Errorf("%s: turn end %v, want %d", c.name, chat.TurnEndIDs, c.turnEnd)
		}
		// --chat 0: raw text, no template, no turn end.
		raw, err := LoadChat(filepath.Join(dir, "tokenizer.json"), dir, "0", nil)
		if err != nil || raw.Template != nil || len(raw.TurnEndIDs) != 0 {
			t.Errorf("%s raw: %+v %v", c.name, raw, err)
		}
	}
	if _, err := LoadChat(filepath.Join(t.TempDir(), "missing.json"), "", "auto", nil); err == nil {
		t.Error("missing tokenizer accepted")
	}
}

// replyAsText turns the conversation's replies into history given as text
// (no generated ids), as the multi-turn references build turn 2: they
// decode turn 1's reply and re-render the whole conversation, where a
// reply generated here keeps its ids. The cache keeps what it holds; the
// next turn keeps the prefix that agrees with the new rendering.
func replyAsText(t *testing.T, c *Conversation) {
	t.Helper()
	msgs := c.Messages()
	for i := range msgs {
		if msgs[i].Role == RoleAssistant {
			msgs[i].Generated = nil
		}
	}
	if u, err := c.Switch(bg, msgs); err != nil || u.Dropped != 0 {
		t.Fatalf("reply as text: %+v (%v)", u, err)
	}
}
