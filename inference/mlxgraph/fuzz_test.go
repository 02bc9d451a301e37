package mlxgraph_test

import (
	"runtime"
	"testing"

	"etchat/inference/mlxgraph"
	"etchat/inference/pte/ptetest"
	"etchat/internal/fuzzing"
)

// allocBound is the most Parse may allocate for an n-byte blob.
func allocBound(n int) uint64 { return 64<<10 + 48*uint64(n) }

func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// seedBlobs are ptetest's synthetic blobs: a graph of every decoded node
// kind, a small graph, and one graph per node kind (a few hundred bytes
// each; small inputs keep the fuzzer's minimisation cheap).
func seedBlobs() [][]byte {
	out := [][]byte{ptetest.MLXBlob(ptetest.EveryNodeGraph()), ptetest.MLXBlob(ptetest.SmallGraph())}
	for i, k := range ptetest.NodeKinds() {
		n, _ := ptetest.MLXNodeOf(k, uint32(i%4))
		g := ptetest.SmallGraph()
		g.Chains[0] = []ptetest.MLXNode{n}
		g.NamedSlots, g.TensorMeta, g.Data = nil, nil, nil
		out = append(out, ptetest.MLXBlob(g))
	}
	return out
}

// FuzzParse: any bytes either parse into a consistent graph or fail with
// an error, without a panic, allocating at most allocBound(len).
func FuzzParse(f *testing.F) {
	blobs := seedBlobs()
	for _, b := range blobs[:2] {
		for _, t := range ptetest.Truncations(b, 3) {
			f.Add(t)
		}
		for _, t := range ptetest.BitFlips(b, 4) {
			f.Add(t)
		}
	}
	for _, b := range blobs {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		defer fuzzing.Time(len(b))()
		before := allocated()
		g, err := mlxgraph.Parse(b)
		if used := allocated() - before; used > allocBound(len(b)) {
			t.Fatalf("Parse of %d bytes allocated %d bytes (bound %d)", len(b), used, allocBound(len(b)))
		}
		if err != nil {
			return
		}
		if g.MainChain < 0 || g.MainChain >= len(g.Chains) || g.InitChain < -1 || g.InitChain >= len(g.Chains) {
			t.Fatalf("chains main %d init %d of %d after a successful parse", g.MainChain, g.InitChain, len(g.Chains))
		}
		if g.DataSegmentOffset+g.DataSegmentSize > uint64(len(b)) {
			t.Fatalf("data segment %d+%d outside the %d-byte blob", g.DataSegmentOffset, g.DataSegmentSize, len(b))
		}
		_ = g.Histogram()
		for _, c := range g.Chains {
			for _, in := range c {
				_ = in.String()
			}
		}
	})
}

// The seeds must parse, and cover every node kind the package decodes: a
// kind ptetest has no field shape for must be one Parse records by name
// only (Op nil). This fails when a decoder is added without its shape in
// ptetest/mlx.go.
func TestFuzzSeedsCoverDecoders(t *testing.T) {
	for i, b := range seedBlobs() {
		if _, err := mlxgraph.Parse(b); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
	g, err := mlxgraph.Parse(ptetest.MLXBlob(ptetest.EveryNodeGraph()))
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, in := range g.Instructions {
		if in.Op == nil {
			t.Errorf("%s: decoded with a nil Op", in.Kind)
		}
		covered[in.Kind] = true
	}
	for i := 1; i <= mlxgraph.NumOpTypes(); i++ {
		kind := mlxgraph.OpName(i)
		if covered[kind] {
			continue
		}
		// An empty table: a kind without a decoder parses with a nil Op.
		gr := ptetest.SmallGraph()
		gr.Chains[0] = []ptetest.MLXNode{{Kind: kind, Fields: ptetest.Fields{}}}
		g, err := mlxgraph.Parse(ptetest.MLXBlob(gr))
		if err != nil || g.Instructions[0].Op != nil {
			t.Errorf("%s is decoded (err %v) but ptetest has no field shape for it: add one to nodeShapes", kind, err)
		}
	}
}

// TestMain bounds the fuzzer's minimisation when fuzzing (see
// fuzzing.MinimizeTime).
func TestMain(m *testing.M) { fuzzing.Main(m) }
