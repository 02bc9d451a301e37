package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"etchat/inference/engine"
)

// Selector picks stored bench results: run ids, filters, and "latest".
// Its text form is a comma list of terms:
//
//	12            run 12 (several ids may be listed)
//	model=NAME    model file name or sha256 prefix
//	engine=cpu    engine
//	batch=B       one invocation's results
//	since=DATE    started on or after DATE (2006-01-02 or RFC 3339)
//	numerics=fast the CPU engine's numerics mode (exact or fast)
//	latest        only the newest invocation among the matches
//
// Filters also narrow a list of ids. Without ids, when several matching
// runs share a test identity, the newest one is taken.
type Selector struct {
	IDs    []int64
	Model  string
	Engine string
	Batch  string
	Since  time.Time
	Latest bool
	// Numerics is the mode to keep (exact, fast); "" = both.
	Numerics string
}

// ParseSelector reads a selector's text form.
func ParseSelector(s string) (Selector, error) {
	var sel Selector
	if strings.TrimSpace(s) == "" {
		return sel, errors.New("empty selector")
	}
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		if term == "latest" {
			sel.Latest = true
			continue
		}
		if id, err := strconv.ParseInt(term, 10, 64); err == nil {
			if id <= 0 {
				return sel, fmt.Errorf("run id %d: ids start at 1", id)
			}
			sel.IDs = append(sel.IDs, id)
			continue
		}
		k, v, ok := strings.Cut(term, "=")
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			return sel, fmt.Errorf("selector term %q: want a run id, latest, or key=value (model, engine, batch, since, numerics)", term)
		}
		if err := sel.set(strings.TrimSpace(k), v); err != nil {
			return sel, err
		}
	}
	return sel, nil
}

// set is one key=value term of a selector.
func (s *Selector) set(k, v string) error {
	switch k {
	case "model":
		s.Model = v
	case "engine":
		s.Engine = v
	case "batch":
		s.Batch = v
	case "numerics":
		if v != engine.NumericsExact && v != engine.NumericsFast {
			return fmt.Errorf("numerics=%s: want exact or fast", v)
		}
		s.Numerics = v
	case "since":
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			if t, err = time.ParseInLocation("2006-01-02", v, time.Local); err != nil {
				return fmt.Errorf("since=%s: want 2006-01-02 or an RFC 3339 time", v)
			}
		}
		s.Since = t
	default:
		return fmt.Errorf("selector key %q: want model, engine, batch, since or numerics", k)
	}
	return nil
}

// Matches applies the selector's model, engine and since filters to one
// result (a run picked by id).
func (sel Selector) Matches(r *Result) bool {
	if sel.Engine != "" && !engine.Same(r.Engine, sel.Engine) {
		return false
	}
	if sel.Numerics != "" && r.Test.NumericsName() != sel.Numerics {
		return false
	}
	if sel.Model != "" && !strings.EqualFold(r.Model.Name, sel.Model) &&
		!strings.HasPrefix(r.Model.SHA256, strings.ToLower(sel.Model)) {
		return false
	}
	return sel.Since.IsZero() || !r.TestTime.Before(sel.Since)
}

// NewestPerTest keeps, of the results sharing a test identity, the newest
// (the higher run id on a tie), in test order.
func NewestPerTest(rs []*Result) []*Result {
	best := map[string]*Result{}
	var order []string
	for _, r := range rs {
		k := r.Test.Key()
		b, ok := best[k]
		if !ok {
			order = append(order, k)
		}
		if !ok || r.TestTime.After(b.TestTime) || (r.TestTime.Equal(b.TestTime) && r.RunID > b.RunID) {
			best[k] = r
		}
	}
	out := make([]*Result, len(order))
	for i, k := range order {
		out[i] = best[k]
	}
	sort.SliceStable(out, func(i, j int) bool { return lessTest(out[i].Test, out[j].Test) })
	return out
}

func lessTest(a, b Test) bool {
	if a.Cache.String() != b.Cache.String() {
		return a.Cache.String() < b.Cache.String()
	}
	if a.NDepth != b.NDepth {
		return a.NDepth < b.NDepth
	}
	if (a.NGen == 0) != (b.NGen == 0) {
		return a.NGen == 0 // pp before tg
	}
	if a.NPrompt != b.NPrompt {
		return a.NPrompt < b.NPrompt
	}
	return a.NGen < b.NGen
}

// CompareOptions set when a change is flagged.
type CompareOptions struct {
	// Alpha is the two-sided significance level of Welch's t-test; 0 = 0.05.
	Alpha float64
	// MinPct is the smallest change worth flagging, percent; 0 = 5.
	MinPct float64
}

// Change is one test's comparison. Base or Cand is nil when only one side
// has the test.
type Change struct {
	Test       Test
	Base, Cand *Result
	DeltaPct   float64 // (cand - base) / base, percent, of the mean tok/s
	P          float64 // the smaller of PWelch and PRank; NaN when either side has < 2 repetitions
	PWelch     float64 // Welch's t-test, two-sided
	PRank      float64 // Mann-Whitney U test, two-sided
	Flagged    bool    // the change is larger than the noise and MinPct
	Note       string  // why not tested, or "slower"/"faster"
}

// Compare matches baseline and candidate results by test identity
// (n_prompt, n_gen, n_depth, cache) and flags changes. A change is flagged
// when the means of the repetitions' tok/s differ by at least MinPct and a
// two-sided test on the repetitions says the difference is not noise
// (p < Alpha): Welch's t-test, or, because one repetition slowed by a busy
// machine inflates the standard deviation, the Mann-Whitney U rank test
// (benchstat's test), whichever is smaller. With fewer than two
// repetitions on a side there is no noise estimate; such a change is
// flagged when it is at least 2·MinPct, with a note saying so. Two single
// results (picked by run id) are compared even when their tests differ.
func Compare(base, cand []*Result, o CompareOptions) []Change {
	if o.Alpha <= 0 {
		o.Alpha = 0.05
	}
	if o.MinPct <= 0 {
		o.MinPct = 5
	}
	cm := map[string]*Result{}
	for _, r := range cand {
		cm[r.Test.Key()] = r
	}
	var out []Change
	used := map[string]bool{}
	for _, b := range base {
		k := b.Test.Key()
		c := cm[k]
		ch := Change{Test: b.Test, Base: b, Cand: c, P: math.NaN(), PWelch: math.NaN(), PRank: math.NaN()}
		if c == nil {
			ch.Note = "not in candidate"
			out = append(out, ch)
			continue
		}
		used[k] = true
		ch.fill(o)
		out = append(out, ch)
	}
	for _, c := range cand {
		if !used[c.Test.Key()] {
			out = append(out, Change{Test: c.Test, Cand: c, P: math.NaN(), PWelch: math.NaN(), PRank: math.NaN(), Note: "not in baseline"})
		}
	}
	if len(base) == 1 && len(cand) == 1 && len(out) == 2 {
		ch := Change{Test: base[0].Test, Base: base[0], Cand: cand[0]}
		ch.fill(o)
		ch.Note = strings.TrimSpace(ch.Note + " (different tests: " + base[0].Test.Key() + " vs " + cand[0].Test.Key() + ")")
		out = []Change{ch}
	}
	return out
}

func (ch *Change) fill(o CompareOptions) {
	a, b := ch.Base.SamplesTS(), ch.Cand.SamplesTS()
	ma, sa := MeanSD(a)
	mb, sb := MeanSD(b)
	ch.P, ch.PWelch, ch.PRank = math.NaN(), math.NaN(), math.NaN()
	if ma > 0 {
		ch.DeltaPct = (mb - ma) / ma * 100
	}
	dir := "faster"
	if ch.DeltaPct < 0 {
		dir = "slower"
	}
	if len(a) < 2 || len(b) < 2 {
		ch.Flagged = math.Abs(ch.DeltaPct) >= 2*o.MinPct
		ch.Note = "no noise estimate (< 2 repetitions)"
		if ch.Flagged {
			ch.Note = dir + ", " + ch.Note
		}
		return
	}
	ch.PWelch = WelchP(ma, sa, len(a), mb, sb, len(b))
	ch.PRank = MannWhitneyP(a, b)
	ch.P = math.Min(ch.PWelch, ch.PRank)
	ch.Flagged = math.Abs(ch.DeltaPct) >= o.MinPct && ch.P < o.Alpha
	if ch.Flagged {
		ch.Note = dir
	}
}

// MannWhitneyP is the two-sided p-value of the Mann-Whitney U test: exact
// for small samples without ties, else the normal approximation with the
// tie and continuity corrections.
func MannWhitneyP(a, b []float64) float64 {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return math.NaN()
	}
	type obs struct {
		v     float64
		first bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range a {
		all = append(all, obs{v, true})
	}
	for _, v := range b {
		all = append(all, obs{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	var r1, tieSum float64
	ties := false
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // mean of ranks i+1 … j
		for k := i; k < j; k++ {
			if all[k].first {
				r1 += rank
			}
		}
		if t := float64(j - i); t > 1 {
			ties = true
			tieSum += t*t*t - t
		}
		i = j
	}
	u1 := r1 - float64(n1*(n1+1))/2
	u := math.Min(u1, float64(n1*n2)-u1)
	if !ties && n1+n2 <= 40 {
		// Exact: count the arrangements with U <= u.
		cnt := uCounts(n1, n2)
		var le, total float64
		for k, c := range cnt {
			total += c
			if float64(k) <= u {
				le += c
			}
		}
		return math.Min(1, 2*le/total)
	}
	n := float64(n1 + n2)
	mu := float64(n1*n2) / 2
	sigma := math.Sqrt(float64(n1*n2) / 12 * ((n + 1) - tieSum/(n*(n-1))))
	if sigma == 0 {
		return 1
	}
	z := (mu - u - 0.5) / sigma
	if z < 0 {
		return 1
	}
	return math.Min(1, math.Erfc(z/math.Sqrt2))
}

// uCounts is the number of arrangements of n1 and n2 items giving each U.
func uCounts(n1, n2 int) []float64 {
	// f[i][j] over u, built up: f(i,j,u) = f(i-1,j,u-j) + f(i,j-1,u).
	prev := make([][]float64, n2+1) // row i-1
	for j := range prev {
		prev[j] = []float64{1} // i = 0: one arrangement, U = 0
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		cur[0] = []float64{1}
		for j := 1; j <= n2; j++ {
			c := make([]float64, i*j+1)
			for u, v := range prev[j] {
				c[u+j] += v
			}
			for u, v := range cur[j-1] {
				c[u] += v
			}
			cur[j] = c
		}
		prev = cur
	}
	return prev[n2]
}

// WelchP is the two-sided p-value of Welch's t-test for two samples given
// as mean, standard deviation (n-1) and size (each at least 2).
func WelchP(m1, s1 float64, n1 int, m2, s2 float64, n2 int) float64 {
	v1, v2 := s1*s1/float64(n1), s2*s2/float64(n2)
	se := math.Sqrt(v1 + v2)
	if se == 0 {
		if m1 == m2 {
			return 1
		}
		return 0
	}
	t := (m1 - m2) / se
	df := (v1 + v2) * (v1 + v2) / (v1*v1/float64(n1-1) + v2*v2/float64(n2-1))
	return StudentTTwoSided(t, df)
}

// StudentTTwoSided is P(|T| ≥ |t|) for Student's t with df degrees of
// freedom: the regularized incomplete beta I_{df/(df+t²)}(df/2, 1/2).
func StudentTTwoSided(t, df float64) float64 {
	if math.IsNaN(t) || df <= 0 {
		return math.NaN()
	}
	if math.IsInf(t, 0) {
		return 0
	}
	return regIncBeta(df/2, 0.5, df/(df+t*t))
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by
// its continued fraction (modified Lentz).
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log(1-x))
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaCF(b, a, 1-x)/b
	}
	return front * betaCF(a, b, x) / a
}

func betaCF(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		aa := fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}

// CompareHeader is the comparison table's header.
var CompareHeader = []string{"test", "cache", "baseline t/s", "candidate t/s", "Δ %", "p", "flag"}

// CompareRow is one change's cells.
func CompareRow(ch Change) []string {
	ts := func(r *Result) string {
		if r == nil {
			return "—"
		}
		return fmt.Sprintf("%.2f ± %.2f (n=%d)", r.AvgTS(), r.StddevTS(), len(r.Reps))
	}
	delta, p := "", ""
	if ch.Base != nil && ch.Cand != nil {
		delta = fmt.Sprintf("%+.1f", ch.DeltaPct)
		if !math.IsNaN(ch.P) {
			p = fmt.Sprintf("%.3g", ch.P)
			if ch.PRank < ch.PWelch {
				p += " U"
			} else {
				p += " t"
			}
		}
	}
	flag := ch.Note
	if ch.Flagged {
		flag = "** " + ch.Note
	}
	return []string{ch.Test.Name(), ch.Test.Cache.String(), ts(ch.Base), ts(ch.Cand), delta, p, flag}
}

// WriteComparison writes a markdown comparison: who the sides are, then one
// row per test. It returns how many changes were flagged.
func WriteComparison(w io.Writer, base, cand []*Result, changes []Change) (int, error) {
	side := func(name string, rs []*Result) string {
		if len(rs) == 0 {
			return name + ": nothing"
		}
		r := rs[0]
		ids := make([]string, len(rs))
		for i, x := range rs {
			ids[i] = strconv.FormatInt(x.RunID, 10)
		}
		return fmt.Sprintf("%s: %s (%.12s) on %s, %s, %s, app %s — runs %s", name, r.Model.Name, r.Model.SHA256, r.Engine,
			r.Machine.CPU, r.TestTime.Local().Format("2006-01-02 15:04"), r.AppVersion, strings.Join(ids, ","))
	}
	fmt.Fprintln(w, side("baseline ", base))
	fmt.Fprintln(w, side("candidate", cand))
	fmt.Fprintln(w)
	rows := [][]string{CompareHeader}
	flagged := 0
	for _, ch := range changes {
		rows = append(rows, CompareRow(ch))
		if ch.Flagged {
			flagged++
		}
	}
	if err := WriteTable(w, rows, []bool{false, false, true, true, true, true, false}); err != nil {
		return flagged, err
	}
	_, err := fmt.Fprintf(w, "\n%d of %d tests changed beyond the noise (** flag: Welch's t-test or Mann-Whitney U on the repetitions' t/s).\n", flagged, len(changes))
	return flagged, err
}

// testKey is a test's kind and size without its cache: pp/tg and the
// sizes and depth.
func testKey(t Test) string { t.Cache = Cache{}; return t.Name() }

// MatchTable lines up two runs' tests by kind and size (pp128, tg64, …),
// whatever their cache configuration, which is a column: comparing a bf16
// cache with an fp32 one compares the same tests.
func MatchTable(base, cand []*Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %-26s %10s   %-26s %10s %8s\n", "test", "baseline cache", "t/s", "candidate cache", "t/s", "change")
	seen := map[string]bool{}
	var keys []string
	for _, r := range append(append([]*Result(nil), base...), cand...) {
		if k := testKey(r.Test); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	find := func(rs []*Result, k string) *Result {
		for _, r := range rs {
			if testKey(r.Test) == k {
				return r
			}
		}
		return nil
	}
	for _, k := range keys {
		bs, cs := find(base, k), find(cand, k)
		col := func(r *Result) (string, string) {
			if r == nil {
				return "—", "—"
			}
			return r.Test.Cache.String(), fmt.Sprintf("%.2f", r.AvgTS())
		}
		bc, bt := col(bs)
		cc, ct := col(cs)
		change := "—"
		if bs != nil && cs != nil && bs.AvgTS() > 0 {
			change = fmt.Sprintf("%+.1f%%", 100*(cs.AvgTS()-bs.AvgTS())/bs.AvgTS())
		}
		fmt.Fprintf(&b, "%-16s %-26s %10s   %-26s %10s %8s\n", k, bc, bt, cc, ct, change)
	}
	return b.String()
}
