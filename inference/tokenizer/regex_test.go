package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func matches(f splitter, s string) []string {
	var out []string
	f.findAll(s, func(a, b int) { out = append(out, s[a:b]) })
	return out
}

func TestRegexEngine(t *testing.T) {
	cases := []struct {
		pattern, input string
		want           []string
	}{
		{`a|ab`, "abab", []string{"a", "a"}},
		{`ab|a`, "abab", []string{"ab", "ab"}},
		{`a+?b`, "aaab", []string{"aaab"}},
		{`a+?`, "aaa", []string{"a", "a", "a"}},
		{`a{2,3}`, "aaaaaaa", []string{"aaa", "aaa"}},
		{`a{2}`, "aaaaa", []string{"aa", "aa"}},
		{`a{,2}x`, "a{,2}x", []string{"a{,2}x"}}, // not a quantifier: literal, as Oniguruma reads it
		{`(?i:abc)`, "xAbCabcABC", []string{"AbC", "abc", "ABC"}},
		{`(?i)k`, "kK\u212a", []string{"k", "K", "\u212a"}},
		{`\p{Lu}+`, "abcDEFgHÉ", []string{"DEF", "HÉ"}},
		{`\p{N}+`, "x12٣٤ⅫⅫ²y", []string{"12٣٤ⅫⅫ²"}},
		{`[^\s\p{L}\p{N}]+`, "ab, c!?d 1-", []string{",", "!?", "-"}},
		{`\s+(?!\S)|\s+`, "a   b  ", []string{"  ", " ", "  "}},
		{`a++a`, "aaaa", nil},
		{`a*+b|a`, "aab", []string{"aab"}},
		{`(?>a|ab)c`, "abc ac", []string{"ac"}},
		{`x(?=y)`, "xxyxz", []string{"x"}},
		{`x(?!y)`, "xxyxz", []string{"x", "x"}},
		{`[a-c\d]+`, "zab1c9d", []string{"ab1c9"}},
		{`[\p{Han}]+`, "漢字かな汉", []string{"漢字", "汉"}},
		{`\w+`, "héllo wörld_1", []string{"héllo", "wörld_1"}},
		{`^a`, "ab\nab", []string{"a", "a"}},
		{`b$`, "ab\nab", []string{"b", "b"}},
		{`\Aa`, "aa", []string{"a"}},
		{`\bfoo\b`, "foo foobar foo", []string{"foo", "foo"}},
		{`(?:ab)+`, "ababab", []string{"ababab"}},
		{`(a|b)*c`, "abacx", []string{"abac"}},
		{`.`, "a\nb", []string{"a", "b"}},
		{`\x41\u0042\x{43}`, "ABC", []string{"ABC"}},
		{`[\-\]]`, "a-]", []string{"-", "]"}},
		{`\P{L}+`, "ab12cd", []string{"12"}},
		{`\p{^L}+`, "ab12cd", []string{"12"}},
		{` ?\p{L}+`, "hi there", []string{"hi", " there"}},
		// GPT-4o's o200k pattern, which has no hand-written scanner.
		{`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
			"HelloWorld's CamelCase 12345 x/y\n\nABC'LL", []string{"Hello", "World's", " Camel", "Case", " ", "123", "45", " x", "/y", "\n\n", "ABC'LL"}},
	}
	for _, c := range cases {
		re, err := compileRegex(c.pattern)
		if err != nil {
			t.Errorf("%q: %v", c.pattern, err)
			continue
		}
		if got := matches(re, c.input); !slices.Equal(got, c.want) {
			t.Errorf("%q on %q: %q, want %q", c.pattern, c.input, got, c.want)
		}
	}
}

// A pattern that recurses once per repetition over a long text, and one
// that backtracks catastrophically, both finish without exhausting the
// stack.
func TestRegexBounded(t *testing.T) {
	// Deeper than the recursion bound: the attempt fails, nothing breaks.
	re, err := compileRegex(`\A(?:a|b)*c`)
	if err != nil {
		t.Fatal(err)
	}
	if got := matches(re, strings.Repeat("ab", 50000)+"c"); got != nil {
		t.Errorf("matched %d pieces past the recursion bound", len(got))
	}
	if got := matches(re, strings.Repeat("ab", 500)+"c"); len(got) != 1 {
		t.Errorf("short input: %d matches, want 1", len(got))
	}
	re, err = compileRegex(`(a*)*b`)
	if err != nil {
		t.Fatal(err)
	}
	if got := matches(re, strings.Repeat("a", 30)); got != nil {
		t.Errorf("matched %q", got)
	}
}

func TestRegexErrors(t *testing.T) {
	for _, p := range []string{`(?<=a)b`, `(?<!a)b`, `\p{NoSuchThing}`, `(ab`, `ab)`, `[ab`, `*a`, `a**`, `\k<x>`, `[a&&b]`, `(?x)a`, `a{2}{3}+`} {
		if _, err := compileRegex(p); err == nil {
			if p == `a**` || p == `a{2}{3}+` {
				continue // stacked quantifiers are legal in Oniguruma
			}
			t.Errorf("%q: compiled, want an error", p)
		} else if !strings.Contains(err.Error(), "regex") {
			t.Errorf("%q: error %q does not say what failed", p, err)
		}
	}
}

// alphabet of the differential tests: all the classes the patterns care
// about, with the characters they treat specially.
var testRunes = []rune("aZé漢かДدहs'SſrRevVElLmMdDtT 0129٣１²Ⅻ \t\n\r\u00a0\u3000\u2028\u200b.,!?-_()[]{}<>@#$%^&*~`\"/\\|+=;:😀🙂\u0301\u0651x")

func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if r.IntN(8) == 0 { // runs of one character (white space, digits)
			c := testRunes[r.IntN(len(testRunes))]
			for k := r.IntN(6); k >= 0; k-- {
				b.WriteRune(c)
			}
			continue
		}
		b.WriteRune(testRunes[r.IntN(len(testRunes))])
	}
	return b.String()
}

func checkScanners(t *testing.T, s string) {
	t.Helper()
	for _, p := range []string{patCL100K, patQwen2, patGPT2} {
		fast, err := newRegexSplitter(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fast.(scanSplitter); !ok {
			t.Fatalf("pattern %q is not recognised", p)
		}
		re, err := compileRegex(p)
		if err != nil {
			t.Fatal(err)
		}
		got, want := matches(fast, s), matches(re, s)
		if !slices.Equal(got, want) {
			t.Fatalf("pattern %q on %q:\nscanner %q\n engine %q", p, s, got, want)
		}
		if strings.Join(got, "") != s {
			t.Fatalf("pattern %q on %q: matches do not tile the text: %q", p, s, got)
		}
	}
}

// The hand-written scanners must agree with the general engine.
func TestScannersMatchEngine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		checkScanners(t, randomText(r, 1+r.IntN(40)))
	}
}
