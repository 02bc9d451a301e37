package app

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// tableBlock is a Markdown table: a grid of cells, the header row bold on
// the header colour, lines between rows and columns. Each column is as
// wide as its widest cell when the table fits its width; when it does
// not, the narrow columns keep their width and the wide ones share the
// rest, their cells wrapping — a table never reaches past the transcript
// (there is no sideways scrolling inside it).
type tableBlock struct {
	widget.BaseWidget
	cells   [][]*widget.RichText // rows, the header first
	natural []float32            // per column: its widest cell unwrapped
	headBg  *canvas.Rectangle
	lines   []*canvas.Rectangle // one under each row, then one after each column but the last
}

func newTableBlock(b mdBlock) *tableBlock {
	t := &tableBlock{natural: make([]float32, len(b.Header))}
	rows := append([][][]mdSpan{b.Header}, b.Rows...)
	for i, r := range rows {
		var cells []*widget.RichText
		for j, spans := range r {
			cells = append(cells, newCell(spans, i == 0, b.Align[j]))
			w := naturalWidth(spans, i == 0)
			if b.Align[j] == "center" || b.Align[j] == "right" {
				// Fyne's rich text places a right or centred line from its
				// left edge, not from its padding: the padding is added
				// here, or the text touches the line before it.
				w += theme.InnerPadding()
			}
			t.natural[j] = max(t.natural[j], w)
		}
		t.cells = append(t.cells, cells)
	}
	t.headBg = canvas.NewRectangle(theme.Color(theme.ColorNameHeaderBackground))
	for range len(rows) + len(b.Header) - 1 {
		t.lines = append(t.lines, canvas.NewRectangle(theme.Color(theme.ColorNameSeparator)))
	}
	t.ExtendBaseWidget(t)
	return t
}

// newCell is one cell's rich text, wrapping at words.
func newCell(spans []mdSpan, head bool, align string) *widget.RichText {
	base := widget.RichTextStyle{Inline: true, ColorName: theme.ColorNameForeground, SizeName: theme.SizeNameText}
	base.TextStyle.Bold = head
	switch align {
	case "center":
		base.Alignment = fyne.TextAlignCenter
	case "right":
		base.Alignment = fyne.TextAlignTrailing
	}
	var segs []widget.RichTextSegment
	for _, s := range spans {
		segs = append(segs, spanSegment(s, base))
	}
	end := base
	end.Inline = false
	rt := widget.NewRichText(append(segs, &widget.TextSegment{Style: end})...)
	rt.Wrapping = fyne.TextWrapWord
	return rt
}

// naturalWidth is a cell's width on one line: its text measured in its
// styles, and the rich text's padding on both sides.
func naturalWidth(spans []mdSpan, head bool) float32 {
	w := 2*theme.InnerPadding() + 1
	for _, s := range spans {
		st := fyne.TextStyle{Bold: s.Bold || head, Italic: s.Italic, Monospace: s.Code}
		w += fyne.MeasureText(s.Text, theme.TextSize(), st).Width
	}
	return w
}

// widths are the columns' widths in w (less the lines between them):
// each its natural width when all fit, else the columns narrower than
// an equal share keep theirs and the others split what is left.
func (t *tableBlock) widths(w float32) []float32 {
	n := len(t.natural)
	out := make([]float32, n)
	w -= float32(n - 1) // the lines between columns
	var sum float32
	for _, x := range t.natural {
		sum += x
	}
	if sum <= w {
		copy(out, t.natural)
		return out
	}
	fixed := make([]bool, n)
	left, free := w, n
	for changed := true; changed && free > 0; {
		changed = false
		share := left / float32(free)
		for j, x := range t.natural {
			if !fixed[j] && x <= share {
				fixed[j], out[j] = true, x
				left -= x
				free--
				changed = true
			}
		}
	}
	for j := range out {
		if !fixed[j] {
			out[j] = max(1, left/float32(free))
		}
	}
	return out
}

// rowHeights are each row's height at the columns' widths.
func (t *tableBlock) rowHeights(ws []float32) []float32 {
	hs := make([]float32, len(t.cells))
	for i, r := range t.cells {
		for j, c := range r {
			hs[i] = max(hs[i], heightAt(c, ws[j]))
		}
	}
	return hs
}

// heightAt is the rows' heights and a line under each, and a padding
// below the table.
func (t *tableBlock) heightAt(w float32) float32 {
	h := theme.Padding()
	for _, rh := range t.rowHeights(t.widths(w)) {
		h += rh + 1
	}
	return h
}

func (t *tableBlock) CreateRenderer() fyne.WidgetRenderer {
	r := &tableRenderer{t: t}
	r.seen.changed()
	return r
}

type tableRenderer struct {
	t    *tableBlock
	seen themeSeen
}

func (r *tableRenderer) Layout(s fyne.Size) {
	t := r.t
	ws := t.widths(s.Width)
	hs := t.rowHeights(ws)
	var width float32
	for _, w := range ws {
		width += w
	}
	width += float32(len(ws) - 1)
	var y float32
	line := 0
	for i, row := range t.cells {
		x := float32(0)
		for j, c := range row {
			c.Move(fyne.NewPos(x, y))
			c.Resize(fyne.NewSize(ws[j], hs[i]))
			x += ws[j] + 1
		}
		if i == 0 {
			t.headBg.Move(fyne.NewPos(0, 0))
			t.headBg.Resize(fyne.NewSize(width, hs[0]))
		}
		y += hs[i]
		t.lines[line].Move(fyne.NewPos(0, y))
		t.lines[line].Resize(fyne.NewSize(width, 1))
		line++
		y++
	}
	x := float32(0)
	for j := 0; j < len(ws)-1; j++ {
		x += ws[j]
		t.lines[line].Move(fyne.NewPos(x, 0))
		t.lines[line].Resize(fyne.NewSize(1, y))
		line++
		x++
	}
}

func (r *tableRenderer) MinSize() fyne.Size {
	return fyne.NewSize(0, r.t.heightAt(r.t.Size().Width))
}

// Refresh takes the theme's colours, and refreshes the cells after a
// theme change.
func (r *tableRenderer) Refresh() {
	r.t.headBg.FillColor = theme.Color(theme.ColorNameHeaderBackground)
	r.t.headBg.Refresh()
	for _, l := range r.t.lines {
		l.FillColor = theme.Color(theme.ColorNameSeparator)
		l.Refresh()
	}
	if r.seen.changed() {
		for _, row := range r.t.cells {
			for _, c := range row {
				c.Refresh()
			}
		}
	}
}

func (r *tableRenderer) Objects() []fyne.CanvasObject {
	objs := []fyne.CanvasObject{r.t.headBg}
	for _, row := range r.t.cells {
		for _, c := range row {
			objs = append(objs, c)
		}
	}
	for _, l := range r.t.lines {
		objs = append(objs, l)
	}
	return objs
}

func (r *tableRenderer) Destroy() {}
