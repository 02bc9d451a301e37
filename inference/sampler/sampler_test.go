package sampler

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"testing"

	"etchat/internal/fixtures"
)

func TestArgmaxMatchesReference(t *testing.T) {
	// The fixtures' prefill logits rows and the first greedy token HF chose.
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3} {
		var ref struct {
			Cases []struct {
				GreedyIDs []int  `json:"greedy_ids"`
				File      string `json:"prefill_last_logits_file"`
				Top5      []int  `json:"prefill_last_top5"`
			} `json:"cases"`
		}
		fixtures.Reference(t, name, &ref)
		for _, c := range ref.Cases {
			row := fixtures.Logits(t, name, c.File)
			got, err := Argmax(row)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.GreedyIDs[0] || got != c.Top5[0] {
				t.Errorf("%s %s: argmax %d, want %d", name, c.File, got, c.GreedyIDs[0])
			}
		}
	}
}

func TestArgmaxEdgeCases(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		row  []float32
		want int
	}{
		{[]float32{1, 3, 3, 2}, 1},                     // first of ties
		{[]float32{1, 2, 3, 4, 5, 6, 7, 9, 9, 1}, 7},   // ties across lanes
		{[]float32{9, 1, 1, 1, 9, 1, 1, 1, 9}, 0},      // tie in lane 0 and tail
		{[]float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 5}, 9},   // tail wins
		{[]float32{nan, 2, nan, 1}, 1},                 // NaN skipped
		{[]float32{float32(math.Inf(-1)), nan}, 0},     // only -Inf
		{[]float32{3, inf, 2, inf}, 1},                 // +Inf
		{[]float32{-5, -4, -4.5, -7, -4, -100, -3}, 6}, // negatives
	}
	for _, c := range cases {
		got, err := Argmax(c.row)
		if err != nil || got != c.want {
			t.Errorf("Argmax(%v) = %d, %v; want %d", c.row, got, err, c.want)
		}
	}
	if _, err := Argmax([]float32{nan, nan}); !errors.Is(err, ErrBadLogits) {
		t.Errorf("all-NaN row: err %v, want ErrBadLogits", err)
	}
	if _, err := Argmax(nil); !errors.Is(err, ErrBadLogits) {
		t.Errorf("empty row: err %v, want ErrBadLogits", err)
	}
	// Random rows against a plain scan.
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		row := make([]float32, 1+r.IntN(40))
		for i := range row {
			row[i] = float32(r.IntN(5))
		}
		want := 0
		for i, v := range row {
			if v > row[want] {
				want = i
			}
		}
		if got, _ := Argmax(row); got != want {
			t.Fatalf("Argmax(%v) = %d, want %d", row, got, want)
		}
	}
}

func TestExpNeg(t *testing.T) {
	for x := float32(0); x > -90; x -= 0.0137 {
		got, want := float64(expNeg(x)), math.Exp(float64(x))
		if want < 1e-37 {
			continue
		}
		if math.Abs(got-want) > 3e-7*want {
			t.Fatalf("expNeg(%v) = %v, want %v", x, got, want)
		}
	}
	if expNeg(-200) != 0 {
		t.Error("expNeg(-200) should underflow to 0")
	}
}

func TestSamplingValidate(t *testing.T) {
	bad := []Sampling{{Temperature: -1}, {Temperature: math.NaN()}, {TopK: -2}, {TopP: 1.5}, {TopP: -0.1}}
	for _, s := range bad {
		if _, err := New(s); err == nil {
			t.Errorf("New(%+v) accepted", s)
		}
	}
}

// distribution samples n times and returns the frequencies.
func distribution(t *testing.T, cfg Sampling, row []float32, n int) map[int]float64 {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	freq := map[int]float64{}
	for i := 0; i < n; i++ {
		id, err := s.Sample(row)
		if err != nil {
			t.Fatal(err)
		}
		freq[id] += 1.0 / float64(n)
	}
	return freq
}

func softmax(row []float32, temp float64) []float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, float64(v))
	}
	p := make([]float64, len(row))
	var z float64
	for i, v := range row {
		p[i] = math.Exp((float64(v) - m) / temp)
		z += p[i]
	}
	for i := range p {
		p[i] /= z
	}
	return p
}

func TestSamplerDistributions(t *testing.T) {
	row := []float32{2, 1, 0.5, 3, -1, 2.5, 0}
	const n = 40000
	tol := 4 * math.Sqrt(0.25/n)

	// Plain temperature sampling follows the softmax.
	p := softmax(row, 0.8)
	got := distribution(t, Sampling{Temperature: 0.8, Seed: 7}, row, n)
	for i := range row {
		if math.Abs(got[i]-p[i]) > tol {
			t.Errorf("T=0.8 token %d: freq %.4f, want %.4f", i, got[i], p[i])
		}
	}

	// Top-k keeps the k best, renormalised.
	got = distribution(t, Sampling{Temperature: 1, TopK: 2, Seed: 3}, row, n)
	p = softmax([]float32{3, 2.5}, 1)
	if math.Abs(got[3]-p[0]) > tol || math.Abs(got[5]-p[1]) > tol || len(got) != 2 {
		t.Errorf("top-2: %v, want {3:%.3f 5:%.3f}", got, p[0], p[1])
	}

	// Top-p keeps the smallest prefix (by probability) whose mass exceeds p.
	full := softmax(row, 1)
	order := []int{0, 1, 2, 3, 4, 5, 6}
	sort.Slice(order, func(a, b int) bool { return full[order[a]] > full[order[b]] })
	var cum float64
	keep := map[int]bool{}
	for _, i := range order {
		cum += full[i]
		keep[i] = true
		if cum > 0.7 {
			break
		}
	}
	got = distribution(t, Sampling{Temperature: 1, TopP: 0.7, Seed: 11}, row, n)
	for id := range got {
		if !keep[id] {
			t.Errorf("top-p 0.7 sampled %d, outside the nucleus %v", id, keep)
		}
	}
	for id := range keep {
		want := full[id] / cum
		if math.Abs(got[id]-want) > tol {
			t.Errorf("top-p token %d: freq %.4f, want %.4f", id, got[id], want)
		}
	}

	// A seed makes the stream repeatable; different seeds differ.
	a := distributionSeq(t, Sampling{Temperature: 1, Seed: 42}, row, 64)
	b := distributionSeq(t, Sampling{Temperature: 1, Seed: 42}, row, 64)
	c := distributionSeq(t, Sampling{Temperature: 1, Seed: 43}, row, 64)
	if !slices.Equal(a, b) {
		t.Error("same seed gave different tokens")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds gave the same 64 tokens")
	}
}

func TestNucleusTiesAndFlat(t *testing.T) {
	// 10 equal logits: top-p 0.35 needs 4 of them (3 reach only 0.3); the
	// lowest ids are kept.
	row := make([]float32, 10)
	got := distribution(t, Sampling{Temperature: 1, TopP: 0.35, Seed: 5}, row, 20000)
	for id := range got {
		if id > 3 {
			t.Errorf("flat top-p 0.35 sampled %d; want ids 0..3", id)
		}
	}
	if len(got) != 4 {
		t.Errorf("flat top-p 0.35 sampled %d distinct ids, want 4", len(got))
	}
	// Top-k with ties keeps the lowest ids.
	got = distribution(t, Sampling{Temperature: 1, TopK: 3, Seed: 5}, []float32{1, 5, 5, 5, 5, 0}, 5000)
	if len(got) != 3 || got[1] == 0 || got[2] == 0 || got[3] == 0 {
		t.Errorf("top-3 over ties: %v, want ids 1,2,3", got)
	}
}

func TestSamplerRealLogits(t *testing.T) {
	row := fixtures.Logits(t, fixtures.Gemma3, "chat0_prefill_last_logits.bin")
	top, _ := Argmax(row)
	// A very low temperature concentrates on the argmax.
	got := distribution(t, Sampling{Temperature: 1e-4, TopP: 0.9, Seed: 1}, row, 50)
	if len(got) != 1 || got[top] == 0 {
		t.Errorf("T=1e-4 picked %v, want only %d", got, top)
	}
	// Every sampled id is in the nucleus computed the slow way.
	p := softmax(row, 0.7)
	order := make([]int, len(p))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p[order[a]] > p[order[b]] })
	keep := map[int]bool{}
	var cum float64
	for _, i := range order {
		cum += p[i]
		keep[i] = true
		if cum > 0.5 {
			break
		}
	}
	got = distribution(t, Sampling{Temperature: 0.7, TopP: 0.5, Seed: 9}, row, 40)
	for id := range got {
		if !keep[id] {
			t.Fatalf("sampled %d outside the %d-token nucleus", id, len(keep))
		}
	}
}

func distributionSeq(t *testing.T, cfg Sampling, row []float32, n int) []int {
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, n)
	for i := range out {
		out[i], _ = s.Sample(row)
	}
	return out
}

func benchRow(b *testing.B) []float32 {
	return fixtures.Logits(b, fixtures.Gemma3, "chat0_prefill_last_logits.bin")
}

func BenchmarkArgmax262k(b *testing.B) {
	row := benchRow(b)
	for b.Loop() {
		Argmax(row)
	}
}

func BenchmarkTopP262k(b *testing.B) {
	row := benchRow(b)
	s, _ := New(Sampling{Temperature: 0.8, TopP: 0.9, Seed: 1})
	for b.Loop() {
		s.Sample(row)
	}
}

func BenchmarkTopK262k(b *testing.B) {
	row := benchRow(b)
	s, _ := New(Sampling{Temperature: 0.8, TopK: 40, TopP: 0.9, Seed: 1})
	for b.Loop() {
		s.Sample(row)
	}
}

func TestSamplerParallelMatchesSerial(t *testing.T) {
	row := fixtures.Logits(t, fixtures.Gemma3, "chat1_prefill_last_logits.bin")
	cfgs := []Sampling{{Temperature: 0.9, TopP: 0.8, Seed: 3}, {Temperature: 1.3, Seed: 4}, {Temperature: 0.5, TopP: 0.3, Seed: 5}}
	run := func(procs int) [][]int {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var out [][]int
		for _, c := range cfgs {
			out = append(out, distributionSeq(t, c, row, 12))
		}
		return out
	}
	serial, parallel := run(1), run(2)
	for i := range cfgs {
		if !slices.Equal(serial[i], parallel[i]) {
			t.Errorf("%+v: serial %v, parallel %v", cfgs[i], serial[i], parallel[i])
		}
	}
}

func TestArgmaxParallelHalves(t *testing.T) {
	row := make([]float32, parallelMin*2+3)
	for i := range row {
		row[i] = float32(i % 1000)
	}
	// The maximum 999 appears in both halves: the first wins.
	if got, _ := Argmax(row); got != 999 {
		t.Errorf("Argmax = %d, want 999", got)
	}
	row[len(row)-1] = 5000 // only in the second half
	if got, _ := Argmax(row); got != len(row)-1 {
		t.Errorf("Argmax = %d, want %d", got, len(row)-1)
	}
	for i := range row {
		row[i] = float32(math.NaN())
	}
	row[parallelMin+7] = float32(math.Inf(-1))
	if got, err := Argmax(row); got != parallelMin+7 || err != nil {
		t.Errorf("Argmax of NaNs and one -Inf = %d, %v", got, err)
	}
}

// draws is n, a tenth of it under the race detector.
func draws(n int) int {
	if raceEnabled {
		return n / 10
	}
	return n
}

func TestWeightNear(t *testing.T) {
	for x := float32(0); x >= -30.5; x -= 0.00731 {
		got, want := float64(weightNear(x)), math.Exp(float64(x))
		if math.Abs(got-want) > 2e-7*want {
			t.Fatalf("weightNear(%v) = %v, want %v", x, got, want)
		}
	}
	if weightNear(0) != 1 || weight(0) != 1 {
		t.Error("e^0 should be exactly 1")
	}
	for _, x := range []float32{-30.6, -50, -86} {
		if got, want := float64(weight(x)), math.Exp(float64(x)); math.Abs(got-want) > 3e-7*want {
			t.Errorf("weight(%v) = %v, want %v", x, got, want)
		}
	}
}

// refNucleus is the nucleus computed the slow way: weights in float64,
// sorted by weight then id, the shortest prefix whose mass exceeds p.
func refNucleus(row []float32, temp, p float64) (keep map[int]float64) {
	w := softmax(row, temp)
	order := make([]int, len(w))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return w[order[a]] > w[order[b]] })
	keep = map[int]float64{}
	var cum float64
	for _, i := range order {
		cum += w[i]
		keep[i] = w[i]
		if cum > p {
			break
		}
	}
	for i := range keep {
		keep[i] /= cum
	}
	return keep
}

func TestVanishingTemperature(t *testing.T) {
	// 1/T overflows float32: the tied maxima share the draws, as at any
	// small temperature, with or without top-k and top-p.
	row := []float32{1, 3, 3, 2, float32(math.NaN()), 3}
	for _, cfg := range []Sampling{{Temperature: 1e-39, Seed: 1}, {Temperature: 1e-39, TopP: 0.5, Seed: 2}, {Temperature: 1e-39, TopK: 4, Seed: 3}} {
		got := distribution(t, cfg, row, 3000)
		want := map[int]bool{1: true, 2: true, 5: true}
		if cfg.TopP > 0 {
			want = map[int]bool{1: true, 2: true} // 2 of 3 equal weights exceed 0.5
		}
		for id := range got {
			if !want[id] {
				t.Errorf("%+v: sampled %d; want only %v", cfg, id, want)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%+v: sampled %v; want each of %v", cfg, got, want)
		}
	}
}

func TestNucleusExactSmallVocab(t *testing.T) {
	// Every reachable token is in the nucleus and every nucleus token is
	// reached, with its renormalised probability.
	r := rand.New(rand.NewPCG(8, 9))
	for trial := 0; trial < 6; trial++ {
		row := make([]float32, 5+r.IntN(12))
		for i := range row {
			row[i] = float32(r.NormFloat64() * 2)
		}
		temp, p := 0.5+r.Float64(), 0.3+0.6*r.Float64()
		keep := refNucleus(row, temp, p)
		n := draws(30000)
		got := distribution(t, Sampling{Temperature: temp, TopP: p, Seed: uint64(trial + 1)}, row, n)
		for id := range got {
			if _, ok := keep[id]; !ok {
				t.Errorf("trial %d: sampled %d outside the nucleus %v", trial, id, keep)
			}
		}
		for id, want := range keep {
			if got[id] == 0 || math.Abs(got[id]-want) > 4*math.Sqrt(want*(1-want)/float64(n))+1e-3 {
				t.Errorf("trial %d token %d: freq %.4f, want %.4f", trial, id, got[id], want)
			}
		}
	}
}

func TestNucleusLargeRowHalves(t *testing.T) {
	// A row wide enough to be weighed in two halves, with a nucleus of a
	// dozen tokens spread over both halves, above a sea of low logits.
	row := make([]float32, parallelMin+5)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range row {
		row[i] = float32(r.Float64() * 2)
	}
	mid := len(row) / 2
	heavy := []int{5, 17, 999, mid - 1, mid, mid + 3, len(row) - 1, 20000, 50000, 77}
	for j, id := range heavy {
		row[id] = 16 + float32(j%4)*0.5
	}
	row[123] = float32(math.NaN())
	keep := refNucleus(row, 1, 0.8)
	for _, procs := range []int{1, 2} {
		if raceEnabled && procs == 1 {
			continue // the race detector is here for the two halves
		}
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			n := draws(2000)
			got := distribution(t, Sampling{Temperature: 1, TopP: 0.8, Seed: 2}, row, n)
			for id := range got {
				if _, ok := keep[id]; !ok {
					t.Errorf("procs %d: sampled %d outside the %d-token nucleus", procs, id, len(keep))
				}
			}
			for id, want := range keep {
				if math.Abs(got[id]-want) > 4*math.Sqrt(want*(1-want)/float64(n))+1e-3 {
					t.Errorf("procs %d token %d: freq %.4f, want %.4f", procs, id, got[id], want)
				}
			}
		}()
	}
}

func TestNucleusFlatLargeRowKeepsLowestIDs(t *testing.T) {
	// All weights equal across both halves: top-p 0.7 keeps exactly the
	// first ⌊0.7·n⌋+1 ids, so the tie list must run in id order across
	// the halves.
	row := make([]float32, parallelMin*2)
	const p = 0.7
	limit := int(p*float64(len(row))) + 1
	got := distribution(t, Sampling{Temperature: 1, TopP: p, Seed: 6}, row, draws(300))
	maxID, above := 0, 0
	for id := range got {
		maxID = max(maxID, id)
		if id >= len(row)/2 {
			above++
		}
	}
	if maxID >= limit {
		t.Errorf("flat top-p %v sampled id %d; want < %d", p, maxID, limit)
	}
	if maxID < limit/2 || above == 0 { // 2^-30: never by chance
		t.Errorf("flat top-p sampled only up to id %d (%d in the second half); want ids up to %d", maxID, above, limit-1)
	}
}

func TestSamplerGemmaNucleusMatchesReference(t *testing.T) {
	// A near-flat 262k row: every draw lies in the nucleus computed the
	// slow way, and the draws spread as wide as that nucleus.
	if raceEnabled {
		t.Skip("semantics only; the two halves are raced in TestNucleusLargeRowHalves")
	}
	row := fixtures.Logits(t, fixtures.Gemma3, "chat0_prefill_last_logits.bin")
	keep := refNucleus(row, 0.8, 0.9)
	n := draws(300)
	got := distribution(t, Sampling{Temperature: 0.8, TopP: 0.9, Seed: 12}, row, n)
	for id := range got {
		if _, ok := keep[id]; !ok {
			t.Errorf("sampled %d outside the %d-token nucleus", id, len(keep))
		}
	}
	if len(got) < n*4/5 {
		t.Errorf("%d draws from a %d-token nucleus gave only %d distinct ids", n, len(keep), len(got))
	}
}

func TestWeighVectorMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 64, 1001} {
		for _, temp := range []float32{0.05, 0.8, 1, 3} {
			row := make([]float32, n)
			for i := range row {
				row[i] = float32(r.NormFloat64() * 4)
				switch r.IntN(20) {
				case 0:
					row[i] = nan
				case 1:
					row[i] = -inf
				}
			}
			maxv := float32(10)
			if n > 0 {
				row[r.IntN(n)] = maxv
			}
			invT := 1 / temp
			floor := maxv - negligible/invT
			if n > 2 {
				row[1] = floor
				row[2] = math.Nextafter32(floor, -inf)
			}
			scale := invT * expSteps
			got, want := make([]float32, n), make([]float32, n)
			weigh(row, got, maxv, floor, scale)
			weighGo(row, want, maxv, floor, scale)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d T %v: weight of %v = %v, want %v", n, temp, row[i], got[i], want[i])
				}
			}
		}
	}
}

func TestArgmaxVectorMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for trial := range 400 {
		n := r.IntN(200)
		row := make([]float32, n)
		for i := range row {
			switch r.IntN(8) {
			case 0:
				row[i] = nan
			case 1:
				row[i] = -inf
			case 2:
				row[i] = float32(r.IntN(3)) // ties
			case 3:
				row[i] = float32(math.Copysign(0, float64(r.IntN(2)*2-1)))
			default:
				row[i] = float32(r.NormFloat64())
			}
		}
		if trial%10 == 0 && n > 0 {
			row[r.IntN(n)] = inf
		}
		if got, want := argmaxRow(row), argmax4(row); got != want {
			t.Fatalf("row %v: argmaxRow %d, argmax4 %d", row, got, want)
		}
	}
}

func TestSamplerVectorMatchesGo(t *testing.T) {
	// The vector kernels must leave every draw as the portable code makes it.
	row := fixtures.Logits(t, fixtures.Gemma3, "chat1_prefill_last_logits.bin")
	cfgs := []Sampling{{Temperature: 0.9, TopP: 0.8, Seed: 3}, {Temperature: 1.3, Seed: 4}, {Temperature: 0.5, TopK: 40, TopP: 0.3, Seed: 5}}
	run := func(vec bool) [][]int {
		defer func(v bool) { useAVX2 = v }(useAVX2)
		useAVX2 = vec && useAVX2
		var out [][]int
		for _, c := range cfgs {
			out = append(out, distributionSeq(t, c, row, 40))
		}
		return out
	}
	scalar, vector := run(false), run(true)
	for i := range cfgs {
		if !slices.Equal(scalar[i], vector[i]) {
			t.Errorf("%+v: portable %v, vector %v", cfgs[i], scalar[i], vector[i])
		}
	}
}
