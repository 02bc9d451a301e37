package app

import (
	"image/color"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

func TestContrastRatio(t *testing.T) {
	white, black := color.White, color.Black
	if r := ContrastRatio(white, black); r < 20.9 || r > 21.1 {
		t.Errorf("white on black %.2f, want 21", r)
	}
	if r := ContrastRatio(color.NRGBA{0x77, 0x77, 0x77, 0xff}, white); r < 4.4 || r > 4.6 {
		t.Errorf("#777 on white %.2f, want ~4.48", r)
	}
}

// Both themes meet WCAG AA (4.5:1) for the text the issue names: the
// meter's text (the theme's text colour on its background) and the
// library's badges (success, warning, error on the background); the
// default theme's light-green badge on white did not.
func TestThemesMeetWCAGAA(t *testing.T) {
	if r := ContrastRatio(theme.DefaultTheme().Color(theme.ColorNameSuccess, theme.VariantLight), color.White); r >= 4.5 {
		t.Logf("note: the default light success colour now reads at %.2f", r)
	}
	for _, name := range []string{"light", "dark"} {
		th := newAppTheme(name)
		bg := th.Color(theme.ColorNameBackground, 0)
		for _, n := range []fyne.ThemeColorName{theme.ColorNameForeground, theme.ColorNameSuccess, theme.ColorNameWarning, theme.ColorNameError} {
			if r := ContrastRatio(th.Color(n, 0), bg); r < 4.5 {
				t.Errorf("%s theme: %s on the background %.2f:1, want ≥ 4.5", name, n, r)
			}
		}
	}
}
