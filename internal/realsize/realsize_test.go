package realsize

import (
	"bytes"
	"context"
	"etchat/inference/sampler"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"etchat/inference"
	"etchat/inference/pte"
	"etchat/internal/engines"
	"etchat/internal/fixtures"
)

func TestMain(m *testing.M) {
	engines.Register()
	os.Exit(m.Run())
}

// TestRoundTripQ4 strips the real 4-bit fixture down to its program (every
// weight segment of 64 bytes or more dropped), fills it back, and checks that
// the filled file is the same program with other weights of the same
// distribution, that it loads in the CPU engine and generates, and that the
// fill is a function of the seed.
func TestRoundTripQ4(t *testing.T) {
	src := fixtures.PTE("llama3-tiny-q4")
	m, skel, err := Strip(src, 64)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(dir, "q4", m, skel); err != nil {
		t.Fatal(err)
	}
	s, err := Load(filepath.Join(dir, "q4.manifest.json"), filepath.Join(dir, "q4.skeleton.gz"))
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}

	// The census of the skeleton is the original's.
	of, err := pte.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer of.Close()
	want, err := TakeCensus(of)
	if err != nil {
		t.Fatal(err)
	}
	sf, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	got, err := TakeCensus(sf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("skeleton census %+v\nwant %+v", got, want)
	}
	if want.QuantMatmuls["affine/4/g32"] != 15 || !want.TiedEmbedding {
		t.Errorf("fixture census %+v: want 15 4-bit g32 matmuls and a tied embedding", want)
	}

	out := filepath.Join(dir, "filled.pte")
	if err := s.Fill(out, 7); err != nil {
		t.Fatal(err)
	}
	filled, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(filled) != len(orig) {
		t.Fatalf("filled %d bytes, original %d", len(filled), len(orig))
	}
	for _, r := range m.Kept {
		if !bytes.Equal(filled[r.Offset:r.Offset+r.Size], orig[r.Offset:r.Offset+r.Size]) {
			t.Errorf("kept range %d+%d differs", r.Offset, r.Size)
		}
	}
	nDropped := 0
	for _, seg := range m.Segments {
		if seg.Kept {
			continue
		}
		nDropped++
		a, b := orig[seg.Offset:seg.Offset+seg.Size], filled[seg.Offset:seg.Offset+seg.Size]
		// A constant tensor (the RMSNorm weights: all ones) refills to
		// itself; any other must come out different.
		if bytes.Equal(a, b) != (seg.Stats.Nibbles == nil && seg.Stats.Min == seg.Stats.Max) {
			t.Errorf("segment %d: refilled bytes equal the original's: %v (stats %+v)", seg.Index, bytes.Equal(a, b), seg.Stats)
			continue
		}
		st, err := statsOf(bytes.NewReader(b), seg.DType)
		if err != nil {
			t.Fatal(err)
		}
		checkLike(t, seg, st)
	}
	if nDropped != 31 {
		t.Errorf("%d segments dropped, want 31 (15 packed weights, 15 scale tables, the norms' shared ones)", nDropped)
	}

	// The filled program runs: prefill and greedy decode in the CPU engine.
	ctx := context.Background()
	mod, err := inference.Load(ctx, out, inference.LoadOptions{Engine: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	gen := mod.Generation(8, sampler.Sampling{})
	gen.IgnoreEOS = true
	res, err := inference.Generate(ctx, mod.Session, []int{1, 2, 3, 4}, gen)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GeneratedIDs) != 8 {
		t.Errorf("generated %v, want 8 ids", res.GeneratedIDs)
	}

	// Same seed, same bytes; another seed, other bytes.
	again := filepath.Join(dir, "again.pte")
	if err := s.Fill(again, 7); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(again); !bytes.Equal(b, filled) {
		t.Error("two fills with seed 7 differ")
	}
	if err := s.Fill(again, 8); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(again); bytes.Equal(b, filled) {
		t.Error("seeds 7 and 8 gave the same file")
	}
}

// checkLike compares a filled segment's statistics with the recorded ones:
// floats within the bounds, mean and deviation within four standard errors
// of a sample of that size; 4-bit fields with each value's share within 3
// points of the original's.
func checkLike(t *testing.T, seg Segment, got *Stats) {
	t.Helper()
	want := seg.Stats
	if want.Nibbles != nil {
		var tw, tg int64
		for i := range 16 {
			tw += want.Nibbles[i]
			tg += got.Nibbles[i]
		}
		for i := range 16 {
			pw, pg := float64(want.Nibbles[i])/float64(tw), float64(got.Nibbles[i])/float64(tg)
			if math.Abs(pw-pg) > 0.03 {
				t.Errorf("segment %d: nibble %d share %.3f, recorded %.3f", seg.Index, i, pg, pw)
			}
		}
		return
	}
	if got.Min < want.Min || got.Max > want.Max {
		t.Errorf("segment %d: filled range [%g, %g] outside the recorded [%g, %g]", seg.Index, got.Min, got.Max, want.Min, want.Max)
	}
	se := 4 / math.Sqrt(float64(got.Count))
	if math.Abs(got.Mean-want.Mean) > se*want.Std+1e-6 || math.Abs(got.Std-want.Std) > se*math.Sqrt2*want.Std+1e-6 {
		t.Errorf("segment %d: filled mean %g std %g, recorded %g %g", seg.Index, got.Mean, got.Std, want.Mean, want.Std)
	}
}

// TestSkeletonReadAt reads across kept and dropped ranges: kept bytes as
// they were, zeros elsewhere, EOF at the end.
func TestSkeletonReadAt(t *testing.T) {
	m := &Manifest{Format: Format, Source: Source{Size: 20}, Kept: []Range{{0, 4}, {8, 4}, {18, 2}}}
	s, err := newSkeleton(m, []byte("abcdefghij"))
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 24)
	n, err := s.ReadAt(p, 2)
	if n != 18 || err == nil {
		t.Errorf("ReadAt past the end: %d, %v; want 18 and EOF", n, err)
	}
	if want := "cd\x00\x00\x00\x00efgh\x00\x00\x00\x00\x00\x00ij"; string(p[:n]) != want {
		t.Errorf("read %q, want %q", p[:n], want)
	}
	if _, err := newSkeleton(m, []byte("short")); err == nil || !strings.Contains(err.Error(), "holds 5 bytes") {
		t.Errorf("short skeleton: %v", err)
	}
	bad := &Manifest{Format: Format, Source: Source{Size: 20}, Kept: []Range{{0, 4}, {2, 4}}}
	if _, err := newSkeleton(bad, make([]byte, 8)); err == nil || !strings.Contains(err.Error(), "overlaps") {
		t.Errorf("overlapping ranges: %v", err)
	}
}

// TestLoadRefuses: a manifest of another format, or a skeleton that is not
// gzip, is an error naming the file.
func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	mp, sp := filepath.Join(dir, "x.manifest.json"), filepath.Join(dir, "x.skeleton.gz")
	os.WriteFile(mp, []byte(`{"format":"other/9"}`), 0o644)
	os.WriteFile(sp, []byte("not gzip"), 0o644)
	if _, err := Load(mp, sp); err == nil || !strings.Contains(err.Error(), "format \"other/9\"") {
		t.Errorf("other format: %v", err)
	}
	os.WriteFile(mp, []byte(`{"format":"`+Format+`"}`), 0o644)
	if _, err := Load(mp, sp); err == nil || !strings.Contains(err.Error(), sp) {
		t.Errorf("bad gzip: %v", err)
	}
}

// TestFillers: the bf16 and fp16 conversions round to nearest even, and a
// dtype with no filler is refused by name.
func TestFillers(t *testing.T) {
	if got := toBF16(1 + 1.0/256); got != 0x3f80 { // halfway: to even
		t.Errorf("bf16(1+2^-8) = %#x, want 0x3f80", got)
	}
	if got := toBF16(1 + 3.0/256); got != 0x3f82 {
		t.Errorf("bf16(1+3·2^-8) = %#x, want 0x3f82", got)
	}
	for _, f := range []float32{1, -2.5, 0.0059, 65504} {
		if got := halfToFloat(toHalf(f)); math.Abs(float64(got-f)) > math.Abs(float64(f))/1024 {
			t.Errorf("fp16 round trip of %g = %g", f, got)
		}
	}
	if got := halfToFloat(0x8001); got != -1.0/(1<<24) { // the smallest subnormal, negative
		t.Errorf("fp16 0x8001 = %g, want -2^-24", got)
	}
	if got := halfToFloat(0x3c00); got != 1 {
		t.Errorf("fp16 0x3c00 = %g, want 1", got)
	}
	if _, err := generator(Segment{DType: "Long", Stats: &Stats{Count: 1}}, nil); err == nil || !strings.Contains(err.Error(), "Long") {
		t.Errorf("Long filler: %v", err)
	}
}
