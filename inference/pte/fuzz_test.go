package pte_test

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"etchat/inference/mlxgraph"
	"etchat/inference/pte"
	"etchat/inference/pte/ptetest"
	"etchat/internal/fuzzing"
)

// allocBound is the most a parse may allocate for an n-byte input: the
// program copy, and decoded structures bounded by the work budget (2 units
// per program byte + 4,096, ~100 bytes each). Fuzzing checks it as a
// property: it found 2.4 KB files allocating 190 KB–5.7 MB through aliased
// methods when the budget's constant was 65,536 and a method cost one unit.
func allocBound(n int) uint64 { return 1<<20 + 256*uint64(n) }

// allocated is the bytes allocated so far by the process.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// FuzzOpen parses any bytes as a whole .pte file and then follows what a
// caller follows: constant methods, delegate blobs (the MLX graph inside).
// It must never panic; errors are FormatErrors; anything accepted is
// self-consistent; Parse allocates at most allocBound(len(data)).
//
// Seeds are ptetest's synthetic files (a few hundred bytes to ~8 KB), their
// truncations and bit flips. They are small on purpose: Go's fuzzer
// minimises every input that finds new coverage, and its minimiser is
// quadratic in the input's length (capped at -fuzzminimizetime, 60 s by
// default). With the fixtures' 5–11 KB program prefixes as seeds, each
// minimisation ran into that cap and the worker made no progress meanwhile
// (docs/fuzzing.md). The real fixtures are regression tests in pte_test.go.
func FuzzOpen(f *testing.F) {
	for _, s := range ptetest.Seeds() {
		f.Add(s.Data)
		for _, b := range ptetest.Truncations(s.Data, 3) {
			f.Add(b)
		}
		for _, b := range ptetest.BitFlips(s.Data, 4) {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer fuzzing.Time(len(data))()
		before := allocated()
		pf, err := pte.Parse(bytes.NewReader(data), int64(len(data)))
		if used := allocated() - before; used > allocBound(len(data)) {
			t.Fatalf("Parse of %d bytes allocated %d bytes (bound %d)", len(data), used, allocBound(len(data)))
		}
		if err != nil {
			var fe *pte.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("not a FormatError: %T %v", err, err)
			}
			return
		}
		checkFile(t, pf, int64(len(data)))
	})
}

func checkFile(t *testing.T, pf *pte.File, size int64) {
	if pf.BytesRead() > pf.Header.ProgramSize+40 {
		t.Fatalf("read %d bytes for a %d-byte program", pf.BytesRead(), pf.Header.ProgramSize)
	}
	inFile := func(what string, off, n int64) {
		if off < 0 || n < 0 || off > size || n > size-off {
			t.Fatalf("%s at %d (+%d) is outside the %d-byte file", what, off, n, size)
		}
	}
	for _, s := range pf.Segments {
		inFile("segment", s.Offset, s.Size)
	}
	for _, nd := range pf.NamedData {
		inFile("named data "+nd.Key, nd.Offset, nd.Size)
	}
	for _, m := range pf.Methods {
		_ = m.Describe()
		for _, d := range m.Delegates {
			inFile("delegate "+d.ID, d.Offset, d.Size)
			blob, err := pf.ReadRange(d.Offset, d.Size)
			if err != nil {
				t.Fatalf("delegate %+v: %v", d, err)
			}
			if d.ID != "MLXBackend" {
				continue
			}
			before := allocated()
			g, err := mlxgraph.Parse(blob)
			if used := allocated() - before; used > allocBound(len(blob)) {
				t.Fatalf("mlxgraph.Parse of %d bytes allocated %d bytes (bound %d)", len(blob), used, allocBound(len(blob)))
			}
			if err == nil {
				checkGraph(t, g)
			}
		}
		if m.IsConstant {
			if v, err := pf.Constant(m.Name); err == nil {
				_ = v.String()
			}
		}
	}
	_ = pf.WeightBytes()
}

func checkGraph(t *testing.T, g *mlxgraph.Graph) {
	if g.MainChain < 0 || g.MainChain >= len(g.Chains) {
		t.Fatalf("main chain %d of %d", g.MainChain, len(g.Chains))
	}
	for _, c := range g.Chains {
		for _, in := range c {
			_ = in.String()
		}
	}
}

// The seeds must be valid files that reach every section: a seed that
// fails early would leave the fuzzer to find the format on its own.
func TestFuzzSeedsParse(t *testing.T) {
	for _, s := range ptetest.Seeds() {
		pf, err := pte.Parse(bytes.NewReader(s.Data), int64(len(s.Data)))
		if err != nil {
			t.Fatalf("%s (%d bytes): %v", s.Name, len(s.Data), err)
		}
		graphs := 0
		for _, m := range pf.Methods {
			for _, d := range m.Delegates {
				if d.ID != "MLXBackend" {
					continue
				}
				blob, err := pf.ReadRange(d.Offset, d.Size)
				if err != nil {
					t.Fatal(err)
				}
				g, err := mlxgraph.Parse(blob)
				if err != nil {
					t.Fatalf("%s: MLX blob: %v", s.Name, err)
				}
				graphs++
				if s.Name == "every-node" && len(g.Kinds()) != len(ptetest.NodeKinds()) {
					t.Errorf("every-node graph has kinds %v, want %v", g.Kinds(), ptetest.NodeKinds())
				}
			}
			if m.IsConstant {
				if _, err := pf.Constant(m.Name); err != nil {
					t.Errorf("%s: %v", s.Name, err)
				}
			}
		}
		if (s.Name == "full" || s.Name == "every-node" || s.Name == "inline") && graphs == 0 {
			t.Errorf("%s: no MLX delegate", s.Name)
		}
		t.Logf("%s: %d bytes, %d methods, %d segments", s.Name, len(s.Data), len(pf.Methods), len(pf.Segments))
	}
}

// TestMain bounds the fuzzer's minimisation when fuzzing (see
// fuzzing.MinimizeTime).
func TestMain(m *testing.M) { fuzzing.Main(m) }
