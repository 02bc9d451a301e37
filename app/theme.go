package app

import (
	"image/color"
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// appTheme is Fyne's default theme with status colours dark enough (light
// variant) or bright enough (dark variant) to read as text on the window's
// background at WCAG AA (4.5:1): the library's badges and the error and
// warning lines are such text. forced, when set, pins the variant.
type appTheme struct {
	fyne.Theme
	forced  bool
	variant fyne.ThemeVariant
}

// themeFor makes the theme ApplyTheme sets; the tests wrap it to draw with
// fonts the repository holds (app/fonts_test.go).
var themeFor = newAppTheme

func newAppTheme(name string) fyne.Theme {
	t := appTheme{Theme: theme.DefaultTheme()}
	switch name {
	case "light":
		t.forced, t.variant = true, theme.VariantLight
	case "dark":
		t.forced, t.variant = true, theme.VariantDark
	}
	return t
}

var statusColors = map[fyne.ThemeColorName][2]color.NRGBA{ // light, dark
	theme.ColorNameSuccess: {{0x1a, 0x7f, 0x37, 0xff}, {0x3f, 0xb9, 0x50, 0xff}},
	theme.ColorNameWarning: {{0x9a, 0x67, 0x00, 0xff}, {0xd2, 0x99, 0x22, 0xff}},
	theme.ColorNameError:   {{0xcf, 0x22, 0x2e, 0xff}, {0xf8, 0x51, 0x49, 0xff}},
}

func (t appTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if t.forced {
		v = t.variant
	}
	if c, ok := statusColors[n]; ok {
		if v == theme.VariantDark {
			return c[1]
		}
		return c[0]
	}
	return t.Theme.Color(n, v)
}

// luminance is WCAG 2's relative luminance of c.
func luminance(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	lin := func(v uint32) float64 {
		s := float64(v) / 0xffff
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(r) + 0.7152*lin(g) + 0.0722*lin(b)
}

// ContrastRatio is WCAG 2's contrast ratio of two colours (1 to 21).
func ContrastRatio(a, b color.Color) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// sendFocusTheme is the app's theme, whichever is set, with a focus colour
// the Send button shows: Fyne's focus colour is the primary colour half
// transparent, which over the primary Send button changed nothing, so a
// focused Send looked unfocused. Here focus lightens it (its label colour
// at 40%).
type sendFocusTheme struct{}

func (sendFocusTheme) current() fyne.Theme { return fyne.CurrentApp().Settings().Theme() }

func (t sendFocusTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if n == theme.ColorNameFocus {
		r, g, b, _ := t.current().Color(theme.ColorNameForegroundOnPrimary, v).RGBA()
		return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 0x66}
	}
	return t.current().Color(n, v)
}

func (t sendFocusTheme) Font(s fyne.TextStyle) fyne.Resource { return t.current().Font(s) }

func (t sendFocusTheme) Icon(n fyne.ThemeIconName) fyne.Resource { return t.current().Icon(n) }

func (t sendFocusTheme) Size(n fyne.ThemeSizeName) float32 { return t.current().Size(n) }
