package app

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"github.com/go-text/typesetting/font"
)

// The tests draw only with fonts this repository holds (issue #22). Fyne
// takes a glyph from the theme's font, then from its own bundled fonts, and
// only then from the machine's (go-text's fontscan reads /usr/share/fonts):
// a glyph none of the bundled fonts has — the CJK in the generated replies —
// was measured in whatever font the machine had, so a master recorded on
// one machine failed on another. The test theme puts testdata/fonts/
// fallback.ttf first (a subset of Droid Sans Fallback holding just the
// glyphs the tests draw beyond Fyne's fonts), and checkFonts fails a view
// test that draws a glyph none of them has, naming it.

const (
	fallbackFont  = "testdata/fonts/fallback.ttf"
	fallbackRunes = "testdata/fonts/runes.txt"
)

// testFontTheme is a theme with the bundled fallback as its text font.
// The fallback holds no glyph Fyne's fonts have, so every other glyph is
// still drawn (and measured) in Fyne's own font for the style.
type testFontTheme struct {
	fyne.Theme
	fallback fyne.Resource
}

func (t testFontTheme) Font(s fyne.TextStyle) fyne.Resource {
	if s.Symbol { // Fyne resolves the symbol style without the theme's text font
		return t.Theme.Font(s)
	}
	return t.fallback
}

var loadFallback = sync.OnceValues(func() (fyne.Resource, error) {
	b, err := os.ReadFile(fallbackFont)
	if err != nil {
		return nil, err
	}
	// Fyne drops a font it cannot parse and then dereferences it: say so here.
	if _, err := font.ParseTTF(bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("%s: %w (scripts/update-masters rebuilds it)", fallbackFont, err)
	}
	return fyne.NewStaticResource(filepath.Base(fallbackFont), b), nil
})

// useTestFonts makes ApplyTheme's themes draw with the bundled fallback.
func useTestFonts() error {
	fb, err := loadFallback()
	if err != nil {
		return fmt.Errorf("the tests' fallback font: %w", err)
	}
	themeFor = func(name string) fyne.Theme { return testFontTheme{Theme: newAppTheme(name), fallback: fb} }
	return nil
}

// faceSet is what can draw a style without the machine's fonts: the
// fallback, then the font Fyne falls back to for the style, then its emoji
// font (painter.CachedFontFace's order).
type faceSet []*font.Face

func (fs faceSet) has(r rune) bool {
	for _, f := range fs {
		if _, ok := f.NominalGlyph(r); ok {
			return true
		}
	}
	return false
}

var loadFaces = sync.OnceValues(func() (map[string]faceSet, error) {
	parse := func(r fyne.Resource) (*font.Face, error) {
		f, err := font.ParseTTF(bytes.NewReader(r.Content()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Name(), err)
		}
		return f, nil
	}
	fb, err := loadFallback()
	if err != nil {
		return nil, err
	}
	sets := map[string]faceSet{}
	for key, res := range map[string][]fyne.Resource{
		"regular":     {fb, theme.DefaultTextFont(), theme.DefaultEmojiFont()},
		"bold":        {fb, theme.DefaultTextBoldFont(), theme.DefaultEmojiFont()},
		"italic":      {fb, theme.DefaultTextItalicFont(), theme.DefaultEmojiFont()},
		"bold italic": {fb, theme.DefaultTextBoldItalicFont(), theme.DefaultEmojiFont()},
		"monospace":   {fb, theme.DefaultTextMonospaceFont(), theme.DefaultEmojiFont()},
		"symbol":      {theme.DefaultSymbolFont()},
	} {
		for _, r := range res {
			if r == nil { // no emoji font in a build with -tags no_emoji
				continue
			}
			f, err := parse(r)
			if err != nil {
				return nil, err
			}
			sets[key] = append(sets[key], f)
		}
	}
	return sets, nil
})

func styleKey(s fyne.TextStyle) string {
	switch {
	case s.Monospace:
		return "monospace"
	case s.Bold && s.Italic:
		return "bold italic"
	case s.Bold:
		return "bold"
	case s.Italic:
		return "italic"
	case s.Symbol:
		return "symbol"
	}
	return "regular"
}

// keepsFace is true for the runes go-text's segmenter draws with the face
// of the text around them (shaping.ignoreFaceChange), which never send it
// looking for another font.
func keepsFace(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cs, unicode.Zl, unicode.Zp, unicode.Cf, unicode.Variation_Selector) ||
		(unicode.Is(unicode.Zs, r) && r != '\u1680')
}

// missingGlyphs lists, per rune, a text on c that draws it with none of the
// bundled fonts having it.
func missingGlyphs(c fyne.Canvas) (map[rune]string, error) {
	sets, err := loadFaces()
	if err != nil {
		return nil, err
	}
	objs := test.LaidOutObjects(c.Content())
	for _, o := range c.Overlays().List() {
		objs = append(objs, test.LaidOutObjects(o)...)
	}
	missing := map[rune]string{}
	for _, o := range objs {
		txt, ok := o.(*canvas.Text)
		if !ok {
			continue
		}
		fs := sets[styleKey(txt.TextStyle)]
		if txt.FontSource != nil { // a text with its own font falls back to the system's alone
			fs = nil
			if f, err := font.ParseTTF(bytes.NewReader(txt.FontSource.Content())); err == nil {
				fs = faceSet{f}
			}
		}
		for _, r := range txt.Text {
			if _, seen := missing[r]; !seen && !keepsFace(r) && r != '\t' && !fs.has(r) {
				missing[r] = txt.Text
			}
		}
	}
	return missing, nil
}

// checkFonts fails t when c draws a glyph that no bundled font has. When
// re-recording masters it also adds such runes to testdata/fonts/runes.txt,
// which scripts/update-masters then builds the fallback from.
func checkFonts(t *testing.T, name string, c fyne.Canvas) {
	t.Helper()
	missing, err := missingGlyphs(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) == 0 {
		return
	}
	var rs []rune
	for r := range missing {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
	var names []string
	for _, r := range rs {
		names = append(names, fmt.Sprintf("U+%04X %q (in %q)", r, r, missing[r]))
	}
	if updMast {
		if err := addRunes(rs); err != nil {
			t.Fatal(err)
		}
		t.Errorf("%s draws glyphs the test fonts lack, added to %s; scripts/update-masters rebuilds the font and re-records: %s",
			name, fallbackRunes, strings.Join(names, ", "))
		return
	}
	t.Errorf("%s draws glyphs no bundled font has, so their width would come from the machine's fonts; "+
		"re-record with scripts/update-masters: %s", name, strings.Join(names, ", "))
}

// readRunes reads runes.txt: one code point a line as U+XXXX, then anything.
func readRunes() (map[rune]bool, error) {
	b, err := os.ReadFile(fallbackRunes)
	if err != nil {
		return nil, err
	}
	set := map[rune]bool{}
	for i, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(f[0], "U+"), 16, 32)
		if err != nil || !strings.HasPrefix(f[0], "U+") {
			return nil, fmt.Errorf("%s:%d: %q is not U+XXXX", fallbackRunes, i+1, f[0])
		}
		set[rune(v)] = true
	}
	return set, nil
}

func addRunes(rs []rune) error {
	set, err := readRunes()
	if err != nil {
		return err
	}
	for _, r := range rs {
		set[r] = true
	}
	return writeRunes(set)
}

func writeRunes(set map[rune]bool) error {
	var all []rune
	for r := range set {
		all = append(all, r)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	var b strings.Builder
	b.WriteString("# The glyphs the UI tests draw that Fyne's bundled fonts lack; scripts/update-masters\n" +
		"# keeps this list and builds fallback.ttf from it. One code point a line.\n")
	for _, r := range all {
		fmt.Fprintf(&b, "U+%04X %c\n", r, r)
	}
	return os.WriteFile(fallbackRunes, []byte(b.String()), 0o644)
}

// The fallback holds every listed code point and no glyph Fyne's own text
// font has, so it changes the width of nothing Fyne could draw itself.
func TestFallbackFont(t *testing.T) {
	want, err := readRunes()
	if err != nil {
		t.Fatal(err)
	}
	fb, err := loadFallback()
	if err != nil {
		t.Fatal(err)
	}
	face, err := font.ParseTTF(bytes.NewReader(fb.Content()))
	if err != nil {
		t.Fatal(err)
	}
	noto, err := font.ParseTTF(bytes.NewReader(theme.DefaultTextFont().Content()))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatalf("%s lists nothing", fallbackRunes)
	}
	for r := range want {
		if _, ok := face.NominalGlyph(r); !ok {
			t.Errorf("%s lacks U+%04X %q from %s: run scripts/update-masters", fallbackFont, r, r, fallbackRunes)
		}
		if _, ok := noto.NominalGlyph(r); ok {
			t.Errorf("U+%04X %q is in Fyne's font: drop it from %s", r, r, fallbackRunes)
		}
	}
	// a Latin letter would be drawn from the fallback, ahead of Fyne's font
	if _, ok := face.NominalGlyph('A'); ok {
		t.Errorf("%s has a glyph for A", fallbackFont)
	}
}
