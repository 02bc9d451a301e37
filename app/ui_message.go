package app

import (
	"net/url"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// One message of the transcript as a widget: its role, its text (a
// reply's as Markdown, see markdown.go; yours as you typed it), its stats
// line and its actions line. Prose is rich text; a code block and a table
// are widgets of their own (Fyne's rich text has no tables, and a code
// block carries a Copy button).
//
// Heights follow widths: wrapped text is taller in a narrow window. A
// widget per message once drew messages over each other because a box
// measured each one before it knew its width; here every column of
// blocks (a message, the transcript) is laid out by columnLayout, which
// measures each block at the width it is given (heightAt) and, when the
// total changes, asks its owner to lay out again.

// heighter is a block whose height follows its width.
type heighter interface {
	heightAt(w float32) float32
}

// heightAt is o's height at width w: its own answer, or (wrapped text)
// its minimum height once it has that width.
func heightAt(o fyne.CanvasObject, w float32) float32 {
	if h, ok := o.(heighter); ok {
		return h.heightAt(w)
	}
	if o.Size().Width != w {
		o.Resize(fyne.NewSize(w, o.Size().Height))
	}
	return o.MinSize().Height
}

// columnLayout stacks its objects at its whole width, each as tall as it
// is at that width. onChange (when set) runs when the total height it
// laid out differs from what it last reported: the scroll around the
// transcript then reads the new height.
type columnLayout struct {
	width, total float32
	onChange     func()
	// heights, when not nil, keeps each object's height at a width: a
	// message's parts do not change once drawn (rebuild forgets those it
	// replaces), and measuring text is what a redraw costs most.
	heights map[fyne.CanvasObject][2]float32
}

// heightAt is o's height at w, from the cache when it has it.
func (c *columnLayout) heightAt(o fyne.CanvasObject, w float32) float32 {
	if c.heights == nil {
		return heightAt(o, w)
	}
	if wh, ok := c.heights[o]; ok && wh[0] == w {
		return wh[1]
	}
	h := heightAt(o, w)
	c.heights[o] = [2]float32{w, h}
	return h
}

func (c *columnLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var h float32
	for _, o := range objs {
		if !o.Visible() {
			continue
		}
		if c.width > 0 {
			h += c.heightAt(o, c.width)
		} else {
			h += o.MinSize().Height
		}
	}
	c.total = h
	return fyne.NewSize(0, h)
}

func (c *columnLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	w := size.Width
	var y float32
	for _, o := range objs {
		if !o.Visible() {
			continue
		}
		h := c.heightAt(o, w)
		o.Move(fyne.NewPos(0, y))
		o.Resize(fyne.NewSize(w, h))
		y += h
	}
	c.width = w
	if y != c.total {
		c.total = y
		if c.onChange != nil {
			c.onChange()
		}
	}
}

// messageView is one message. Build it with newMessageView; SetText
// redraws it (a streaming reply, one redraw per merged batch of tokens).
type messageView struct {
	widget.BaseWidget
	role        string
	markdown    bool // a reply: its text is drawn as Markdown
	text, stats string
	actions     []widget.RichTextSegment
	onCopy      func(string) // a code block's Copy

	col   *columnLayout
	box   *fyne.Container
	parts []part // what box draws, one widget each
	// hw, hh: the height last measured and its width (hh 0: measure
	// again). Messages above the one streaming are measured at every
	// redraw; their text has not changed.
	hw, hh float32
}

// newMessageView is message text of role with its stats line (may be
// empty) and its actions line (Copy, … links; may be nil); onCopy takes a
// code block's text when its Copy is pressed.
func newMessageView(role, text, stats string, actions []widget.RichTextSegment, onCopy func(string)) *messageView {
	m := &messageView{role: role, markdown: role == "assistant", stats: stats, actions: actions, onCopy: onCopy}
	m.col = &columnLayout{heights: map[fyne.CanvasObject][2]float32{}}
	m.box = &fyne.Container{Layout: m.col}
	m.ExtendBaseWidget(m)
	m.SetText(text)
	return m
}

// SetText draws text in place of the message's text.
func (m *messageView) SetText(text string) {
	m.text = text
	m.rebuild()
}

// SetStats draws stats as the message's stats line.
func (m *messageView) SetStats(stats string) {
	if stats != m.stats {
		m.stats = stats
		m.rebuild()
	}
}

// part is one widget of a message: a run of prose blocks (the first
// with the role's header, the last with the stats and actions lines) in
// one rich text, or one code block or table.
type part struct {
	blocks     []mdBlock
	head, tail bool
	stats      string // the stats line drawn (tail only)
}

// maxProse is how many bytes of prose one rich text holds before the
// next paragraph starts another: a long reply streaming redraws only its
// last part, so the cost of a redraw stays bounded.
const maxProse = 1500

// plan cuts blocks into parts.
func (m *messageView) plan(blocks []mdBlock) []part {
	parts := []part{{head: true}}
	size := 0
	for _, b := range blocks {
		last := &parts[len(parts)-1]
		prose := len(last.blocks) == 0 || (last.blocks[0].Kind != mdCode && last.blocks[0].Kind != mdTable)
		switch {
		case b.Kind == mdCode || b.Kind == mdTable:
			parts = append(parts, part{blocks: []mdBlock{b}})
			continue
		case !prose || size >= maxProse:
			parts = append(parts, part{})
			size = 0
		}
		last = &parts[len(parts)-1]
		last.blocks = append(last.blocks, b)
		for _, s := range b.Spans {
			size += len(s.Text)
		}
	}
	if l := &parts[len(parts)-1]; len(l.blocks) > 0 && (l.blocks[0].Kind == mdCode || l.blocks[0].Kind == mdTable) {
		parts = append(parts, part{})
	}
	parts[len(parts)-1].tail = true
	parts[len(parts)-1].stats = m.stats
	return parts
}

// rebuild draws the message's parts again. Parts that did not change
// (all but the last while a reply streams) keep their widgets untouched.
func (m *messageView) rebuild() {
	var blocks []mdBlock
	if m.markdown {
		blocks = parseMarkdown(m.text)
	} else if m.text != "" {
		blocks = []mdBlock{{Kind: mdPara, Spans: []mdSpan{{Text: m.text}}}}
	}
	plan := m.plan(blocks)
	objs := make([]fyne.CanvasObject, len(plan))
	for k, p := range plan {
		var old fyne.CanvasObject
		if k < len(m.box.Objects) {
			old = m.box.Objects[k]
		}
		if old != nil && k < len(m.parts) && partEqual(m.parts[k], p) {
			objs[k] = old
			continue
		}
		objs[k] = m.partObject(p, old)
		delete(m.col.heights, objs[k])
	}
	for _, o := range m.box.Objects[min(len(objs), len(m.box.Objects)):] {
		delete(m.col.heights, o)
	}
	m.parts = plan
	m.hh = 0
	m.box.Objects = objs
	relayout(m.box)
}

// relayout lays c out again and has it drawn, without refreshing what it
// holds (fyne.Container.Refresh refreshes every object below it: at every
// token, the whole transcript).
func relayout(c *fyne.Container) {
	c.Layout.Layout(c.Objects, c.Size())
	canvas.Refresh(c)
}

// themeSeen is the theme a renderer last drew in. A refresh after the
// theme changed must reach every object below (the chat tab, hidden
// while the theme changes, is refreshed from the top when shown); any
// other refresh — one per streamed token — only lays out again.
type themeSeen [2][4]uint32

// changed reports whether the theme differs from the one last seen, and
// remembers it.
func (t *themeSeen) changed() bool {
	var now themeSeen
	for i, n := range []fyne.ThemeColorName{theme.ColorNameForeground, theme.ColorNameBackground} {
		r, g, b, a := theme.Color(n).RGBA()
		now[i] = [4]uint32{r, g, b, a}
	}
	if now == *t {
		return false
	}
	*t = now
	return true
}

// refreshBox refreshes box: everything below it after a theme change,
// else a new layout only.
func refreshBox(box *fyne.Container, seen *themeSeen) {
	if seen.changed() {
		box.Refresh()
		return
	}
	relayout(box)
}

// partObject is p's widget: old's rich text with new segments, or a new
// code block or table.
func (m *messageView) partObject(p part, old fyne.CanvasObject) fyne.CanvasObject {
	if len(p.blocks) == 1 && p.blocks[0].Kind == mdCode {
		return newCodeBlock(p.blocks[0].Code, p.blocks[0].Lang, m.onCopy)
	}
	if len(p.blocks) == 1 && p.blocks[0].Kind == mdTable {
		return newTableBlock(p.blocks[0])
	}
	var segs []widget.RichTextSegment
	if p.head {
		segs = append(segs, &widget.TextSegment{Style: widget.RichTextStyle{TextStyle: fyne.TextStyle{Bold: true},
			ColorName: theme.ColorNamePrimary}, Text: roleTitle(m.role)})
	}
	for _, b := range p.blocks {
		segs = append(segs, blockSegments(b)...)
	}
	if p.tail {
		if p.stats != "" {
			segs = append(segs, &widget.TextSegment{Style: widget.RichTextStyle{TextStyle: fyne.TextStyle{Italic: true},
				ColorName: theme.ColorNamePlaceHolder, SizeName: theme.SizeNameCaptionText}, Text: p.stats})
		}
		segs = append(segs, m.actions...)
	}
	rt, ok := old.(*widget.RichText)
	if !ok {
		rt = widget.NewRichText()
		rt.Wrapping = fyne.TextWrapWord
	}
	rt.Segments = segs
	rt.Refresh()
	return rt
}

// partEqual is whether two parts draw the same.
func partEqual(a, b part) bool {
	if a.head != b.head || a.tail != b.tail || a.stats != b.stats || len(a.blocks) != len(b.blocks) {
		return false
	}
	for i := range a.blocks {
		if !blockEqual(a.blocks[i], b.blocks[i]) {
			return false
		}
	}
	return true
}

// blockEqual is whether two blocks draw the same.
func blockEqual(a, b mdBlock) bool {
	if a.Kind != b.Kind || a.Level != b.Level || a.Marker != b.Marker || a.Code != b.Code || a.Lang != b.Lang ||
		!spansEqual(a.Spans, b.Spans) || len(a.Rows) != len(b.Rows) || len(a.Header) != len(b.Header) {
		return false
	}
	for i, h := range a.Header {
		if !spansEqual(h, b.Header[i]) || a.Align[i] != b.Align[i] {
			return false
		}
	}
	for i, r := range a.Rows {
		for j, c := range r {
			if !spansEqual(c, b.Rows[i][j]) {
				return false
			}
		}
	}
	return true
}

func spansEqual(a, b []mdSpan) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// heightAt is the message's height at width w.
func (m *messageView) heightAt(w float32) float32 {
	if m.hh > 0 && m.hw == w {
		return m.hh
	}
	var h float32
	for _, o := range m.box.Objects {
		h += m.col.heightAt(o, w)
	}
	m.hw, m.hh = w, h
	return h
}

func (m *messageView) CreateRenderer() fyne.WidgetRenderer {
	r := &messageRenderer{boxRenderer{box: m.box}, m}
	r.seen.changed() // drawn in the theme of now
	return r
}

// messageRenderer measures again after a refresh (a theme change).
type messageRenderer struct {
	boxRenderer
	m *messageView
}

func (r *messageRenderer) Refresh() {
	r.m.hh = 0
	clear(r.m.col.heights)
	refreshBox(r.box, &r.seen)
}

// boxRenderer draws a widget that is one container.
type boxRenderer struct {
	box  *fyne.Container
	seen themeSeen
}

func (r *boxRenderer) Layout(s fyne.Size)           { r.box.Resize(s) }
func (r *boxRenderer) MinSize() fyne.Size           { return r.box.MinSize() }
func (r *boxRenderer) Refresh()                     { refreshBox(r.box, &r.seen) }
func (r *boxRenderer) Objects() []fyne.CanvasObject { return []fyne.CanvasObject{r.box} }
func (r *boxRenderer) Destroy()                     {}

// blockSegments are a prose block as rich-text segments: its spans
// inline, the last ending the line.
func blockSegments(b mdBlock) []widget.RichTextSegment {
	base := widget.RichTextStyle{Inline: true, ColorName: theme.ColorNameForeground, SizeName: theme.SizeNameText}
	var segs []widget.RichTextSegment
	switch b.Kind {
	case mdRule:
		return []widget.RichTextSegment{&widget.SeparatorSegment{}}
	case mdHeading:
		base.TextStyle.Bold = true
		switch b.Level {
		case 1:
			base.SizeName = theme.SizeNameHeadingText
		case 2:
			base.SizeName = theme.SizeNameSubHeadingText
		}
	case mdItem:
		marker := b.Marker
		if marker == "" {
			marker = "  " // a later paragraph of the item: indented as its text
		}
		segs = append(segs, &widget.TextSegment{Style: base, Text: strings.Repeat("    ", b.Level) + marker + " "})
	case mdQuote:
		base.TextStyle.Italic = true
		base.ColorName = theme.ColorNamePlaceHolder
		segs = append(segs, &widget.TextSegment{Style: base, Text: "    "})
	}
	for _, s := range b.Spans {
		segs = append(segs, spanSegment(s, base))
	}
	// The line ends here: a non-inline empty segment closes the row.
	end := base
	end.Inline = false
	return append(segs, &widget.TextSegment{Style: end, Text: ""})
}

// spanSegment is one span in the block's style.
func spanSegment(s mdSpan, base widget.RichTextStyle) widget.RichTextSegment {
	if s.URL != "" {
		if u, err := url.Parse(s.URL); err == nil && u.Scheme != "" {
			return &widget.HyperlinkSegment{Text: s.Text, URL: u}
		}
	}
	st := base
	st.TextStyle.Bold = st.TextStyle.Bold || s.Bold
	st.TextStyle.Italic = st.TextStyle.Italic || s.Italic
	if s.Code {
		st.TextStyle.Monospace = true
		st.ColorName = theme.ColorNamePrimary
	}
	if s.Strike { // Fyne's text has no strikethrough: struck text is greyed
		st.ColorName = theme.ColorNamePlaceHolder
	}
	return &widget.TextSegment{Style: st, Text: s.Text}
}

// codeBlock is a code block: a monospace box whose lines wrap at the
// box's width (no sideways scrolling inside the transcript's scroll) and
// a Copy button above its right corner that copies exactly the code.
type codeBlock struct {
	widget.BaseWidget
	code, lang string
	bg         *canvas.Rectangle
	label      *widget.RichText // the fence's language
	copyBtn    *widget.Button
	text       *widget.RichText
}

func newCodeBlock(code, lang string, onCopy func(string)) *codeBlock {
	c := &codeBlock{code: code, lang: lang}
	c.bg = canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	c.bg.CornerRadius = theme.InputRadiusSize()
	// In the stats line's colour: a low-importance label was near invisible
	// on the box's background.
	c.label = widget.NewRichText(&widget.TextSegment{Text: lang, Style: widget.RichTextStyle{
		ColorName: theme.ColorNamePlaceHolder, SizeName: theme.SizeNameCaptionText}})
	c.copyBtn = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() {
		if onCopy != nil {
			onCopy(c.code)
		}
	})
	c.copyBtn.Importance = widget.LowImportance
	c.text = widget.NewRichText(&widget.TextSegment{Style: widget.RichTextStyleCodeBlock, Text: code})
	c.text.Wrapping = fyne.TextWrapBreak
	c.ExtendBaseWidget(c)
	return c
}

// heightAt: a padding, the Copy row, the code at the box's inner width,
// a padding.
func (c *codeBlock) heightAt(w float32) float32 {
	p := theme.Padding()
	return p + c.copyBtn.MinSize().Height + heightAt(c.text, w-2*p) + p
}

func (c *codeBlock) CreateRenderer() fyne.WidgetRenderer {
	r := &codeRenderer{c: c}
	r.seen.changed()
	return r
}

type codeRenderer struct {
	c    *codeBlock
	seen themeSeen
}

func (r *codeRenderer) Layout(s fyne.Size) {
	c, p := r.c, theme.Padding()
	c.bg.Move(fyne.NewPos(0, p/2))
	c.bg.Resize(fyne.NewSize(s.Width, s.Height-p))
	bh := c.copyBtn.MinSize()
	c.copyBtn.Move(fyne.NewPos(s.Width-p-bh.Width, p))
	c.copyBtn.Resize(bh)
	c.label.Move(fyne.NewPos(p, p))
	c.label.Resize(fyne.NewSize(max(0, s.Width-3*p-bh.Width), bh.Height))
	th := heightAt(c.text, s.Width-2*p)
	c.text.Move(fyne.NewPos(p, p+bh.Height))
	c.text.Resize(fyne.NewSize(s.Width-2*p, th))
}

func (r *codeRenderer) MinSize() fyne.Size {
	w := r.c.Size().Width
	return fyne.NewSize(0, r.c.heightAt(w))
}

// Refresh takes the theme's colours, and refreshes the box's widgets
// after a theme change.
func (r *codeRenderer) Refresh() {
	r.c.bg.FillColor = theme.Color(theme.ColorNameInputBackground)
	r.c.bg.CornerRadius = theme.InputRadiusSize()
	r.c.bg.Refresh()
	if r.seen.changed() {
		r.c.label.Refresh()
		r.c.copyBtn.Refresh()
		r.c.text.Refresh()
	}
}

func (r *codeRenderer) Objects() []fyne.CanvasObject {
	return []fyne.CanvasObject{r.c.bg, r.c.label, r.c.copyBtn, r.c.text}
}

func (r *codeRenderer) Destroy() {}
