package cli

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"etchat/inference"
	"etchat/inference/bench"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

// The CLI's run, the benchmark and the loader called directly assemble the
// same model: stop set, cache configuration, engine and the reason it was
// chosen. (The app's side is in package app's tests.)
func TestOnePathThroughTheLoader(t *testing.T) {
	ctx := context.Background()
	for _, fx := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3} {
		t.Run(fx, func(t *testing.T) {
			dir := fixtures.Unpacked(t, fx)
			pte := dir + "/model.pte"
			policy := kvcache.Policy{StorageDType: "fp16", Capacity: 96, InitialCapacity: -1}

			direct, err := inference.Load(ctx, pte, inference.LoadOptions{Engine: "auto", Policy: policy})
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()

			o := runOpts{pte: pte, engine: "auto", chat: "auto", cache: cacheFlags{capacity: 96, dtype: "fp16", initial: -1}}
			viaCLI, err := o.prepare(true)
			if err != nil {
				t.Fatal(err)
			}
			if err := viaCLI.Open(ctx); err != nil {
				t.Fatal(err)
			}
			defer viaCLI.Close()

			bms, err := bench.PrepareModels(bench.Options{PTE: pte, Prompts: []int{8}, Reps: 1, EngineChoice: "auto",
				Caches: []bench.CacheSpec{{DType: "fp16", Capacity: 96}}})
			if err != nil || len(bms) != 1 {
				t.Fatalf("bench: %d models, %v", len(bms), err)
			}
			viaBench := bms[0]
			if err := viaBench.Open(ctx); err != nil {
				t.Fatal(err)
			}
			defer viaBench.Close()

			if len(direct.StopIDs) == 0 || direct.Cache == nil || direct.Cache.Capacity != 96 {
				t.Fatalf("loader: stop %v cache %+v", direct.StopIDs, direct.Cache)
			}
			for name, m := range map[string]*inference.Model{"cli": viaCLI, "bench": viaBench} {
				if !slices.Equal(m.StopIDs, direct.StopIDs) {
					t.Errorf("%s stop set %v, loader %v", name, m.StopIDs, direct.StopIDs)
				}
				if !reflect.DeepEqual(m.Cache, direct.Cache) {
					t.Errorf("%s cache %+v, loader %+v", name, m.Cache, direct.Cache)
				}
				if m.Engine.Name != direct.Engine.Name || m.Engine.Device != direct.Engine.Device || m.Engine.Reason != direct.Engine.Reason {
					t.Errorf("%s engine %q, loader %q", name, m.Engine, direct.Engine)
				}
			}
			// The stop set holds the .pte's get_eos_ids and the tokenizer's EOS.
			for _, id := range direct.Info.EOSIDs {
				if !slices.Contains(direct.StopIDs, id) {
					t.Errorf("stop set %v lacks the .pte's EOS %d", direct.StopIDs, id)
				}
			}
			if id, ok := direct.Chat.HF.EOS(); ok && !slices.Contains(direct.StopIDs, id) {
				t.Errorf("stop set %v lacks the tokenizer's EOS %d", direct.StopIDs, id)
			}
			// Here (no runner library, or MLX on the CPU) auto says why it chose the CPU engine.
			if direct.Engine.Name == engine.CPU && (!direct.Engine.Auto || direct.Engine.Reason == "") {
				t.Errorf("auto without a reason: %+v", direct.Engine)
			}
		})
	}
}
