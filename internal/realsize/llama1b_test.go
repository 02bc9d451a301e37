package realsize

import (
	"context"
	"etchat/inference/sampler"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"etchat/inference"
	"etchat/internal/fixtures"
)

// llama1b is the skeleton of the random-weight Llama-3.2-1B-shaped 4-bit
// export made on the GPU machine (docs/performance.md, "Real-size programs").
func llama1b(t *testing.T) *Skeleton {
	t.Helper()
	dir := filepath.Join(fixtures.Root(), "realsize")
	s, err := Load(filepath.Join(dir, "llama1b-q4.manifest.json"), filepath.Join(dir, "llama1b-q4.skeleton.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCensusLlama1B checks the skeleton against what the device export was
// (issue 28): 716 MLX instructions (602 a step, 114 at load), 113 4-bit
// group-32 quantized matmuls, the tied embedding stored once, 16 flat caches
// of 8 KV heads of 64; and the manifest against the export's own record
// (export.json: 695255424 bytes, that sha256).
func TestCensusLlama1B(t *testing.T) {
	s := llama1b(t)
	if got, want := s.Manifest.Source, (Source{Name: "model.pte", Size: 695255424,
		SHA256: "9ee8678d774f00b3406f7f3a6d11884c70fd43475c536b10e432c73644a14aec"}); got != want {
		t.Errorf("source %+v, want %+v", got, want)
	}
	f, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	c, err := TakeCensus(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Instructions != 716 || c.MainInstructions != 602 || c.InitInstructions != 114 {
		t.Errorf("instructions %d (main %d, init %d), want 716 (602, 114)", c.Instructions, c.MainInstructions, c.InitInstructions)
	}
	if want := map[string]int{"affine/4/g32": 113}; !reflect.DeepEqual(c.QuantMatmuls, want) {
		t.Errorf("quantized matmuls %v, want %v", c.QuantMatmuls, want)
	}
	if !c.TiedEmbedding || c.LMHeadKeys != 0 || c.EmbeddingSegments != 3 {
		t.Errorf("embedding: tied %v, lm_head keys %d, embedding segments %d; want tied, 0, 3 (packed, scales, shared biases placeholder)",
			c.TiedEmbedding, c.LMHeadKeys, c.EmbeddingSegments)
	}
	if c.NCaches != 16 || !allEq(c.KVHeads, 16, 8) || !allEq(c.HeadDims, 16, 64) || !allEq(c.Windows, 16, 0) {
		t.Errorf("caches %d, kv heads %v, head dims %v, windows %v; want 16 flat caches of 8×64", c.NCaches, c.KVHeads, c.HeadDims, c.Windows)
	}
	if c.Histogram["UpdateAndAttendNode"] != 16 || c.Histogram["DequantizeNode"] != 1 {
		t.Errorf("histogram %v: want 16 UpdateAndAttendNodes and the embedding's one DequantizeNode", c.Histogram)
	}

	// Every dropped segment is exactly its tensor's bytes, so a fill writes
	// what the graph will read: 113 packed weights (the 112 linears and the
	// embedding/head) and their 113 bf16 scale tables.
	kinds := map[string]int{}
	var dropped int64
	for _, seg := range s.Manifest.Segments {
		if seg.Kept {
			continue
		}
		kinds[seg.DType]++
		dropped += seg.Size
		n := int64(1)
		for _, d := range seg.Shape {
			n *= d
		}
		if w := map[string]int64{"UInt32": 4, "BFloat16": 2}[seg.DType]; n*w != seg.Size || seg.Stats == nil {
			t.Errorf("segment %d: %s %v is %d bytes, stats %v", seg.Index, seg.DType, seg.Shape, seg.Size, seg.Stats)
		}
	}
	if want := map[string]int{"UInt32": 113, "BFloat16": 113}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("dropped segments %v, want %v", kinds, want)
	}
	if dropped < 690e6 || f.Size-dropped > 1<<20 {
		t.Errorf("dropped %d of %d bytes: the skeleton should be all but ~150 KB", dropped, f.Size)
	}
}

func allEq(v []int64, n int, x int64) bool {
	return len(v) == n && !slices.ContainsFunc(v, func(y int64) bool { return y != x })
}

// TestLlama1BRuns fills the real-size program (663 MiB, under the system's
// temp folder) and generates from it in the CPU engine: the same 4 ids the
// device machine's etchat gave from its fill of the same skeleton with the
// same seed (the fill is machine-independent). Slow: ETCHAT_REALSIZE=1 runs
// it.
func TestLlama1BRuns(t *testing.T) {
	if os.Getenv("ETCHAT_REALSIZE") == "" {
		t.Skip("set ETCHAT_REALSIZE=1 to fill and run the 663 MiB real-size program")
	}
	s := llama1b(t)
	out := filepath.Join(t.TempDir(), "llama1b-q4.pte")
	if err := s.Fill(out, 1); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mod, err := inference.Load(ctx, out, inference.LoadOptions{Engine: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	prompt := make([]int, 128)
	for i := range prompt {
		prompt[i] = 1000 + 7*i
	}
	gen := mod.Generation(4, sampler.Sampling{})
	gen.IgnoreEOS = true
	res, err := inference.Generate(ctx, mod.Session, prompt, gen)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{62572, 5499, 68076, 77681}; !slices.Equal(res.GeneratedIDs, want) {
		t.Errorf("generated %v, want %v (the device's run of the same fill)", res.GeneratedIDs, want)
	}
}
