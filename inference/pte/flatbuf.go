package pte

import (
	"encoding/binary"
	"fmt"
	"math"
)

// dec is a small, bounds-checked flatbuffer reader over one buffer. Every
// accessor checks its offsets against the buffer and against the table's
// inline size; the first failure is kept in err and every later accessor
// returns zero values, so callers check err once per unit of work.
//
// budget bounds the total work (elements visited) so that a hostile file
// whose vectors alias each other cannot make parsing quadratic.
type dec struct {
	b      []byte
	err    error
	budget int64
}

// tbl is a located table: its position, its vtable and their sizes.
type tbl struct {
	pos   uint64 // table start
	vt    uint64 // vtable start
	vtLen uint64 // vtable bytes
	size  uint64 // table inline bytes
	what  string // for error messages
}

// vec is a located vector: where its elements start and how many there are.
type vec struct {
	start uint64 // first element
	n     uint64
	elem  uint64
	what  string
}

func (d *dec) failf(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, a...)
	}
}

func (d *dec) spend(n uint64, what string) bool {
	if d.err != nil {
		return false
	}
	if int64(n) < 0 || int64(n) > d.budget {
		d.failf("%s: program too complex (work budget exhausted)", what)
		return false
	}
	d.budget -= int64(n)
	return true
}

func (d *dec) in(at, n uint64, what string) bool {
	if d.err != nil {
		return false
	}
	if at > uint64(len(d.b)) || n > uint64(len(d.b))-at {
		d.failf("%s: offset %d (+%d bytes) is outside the %d-byte program", what, at, n, len(d.b))
		return false
	}
	return true
}

func (d *dec) u16(at uint64, what string) uint16 {
	if !d.in(at, 2, what) {
		return 0
	}
	return binary.LittleEndian.Uint16(d.b[at:])
}

func (d *dec) u32(at uint64, what string) uint32 {
	if !d.in(at, 4, what) {
		return 0
	}
	return binary.LittleEndian.Uint32(d.b[at:])
}

// tableAt locates the table starting at pos.
func (d *dec) tableAt(pos uint64, what string) (tbl, bool) {
	if !d.in(pos, 4, what) {
		return tbl{}, false
	}
	soff := int64(int32(binary.LittleEndian.Uint32(d.b[pos:])))
	vt := int64(pos) - soff
	if vt < 0 || uint64(vt)+4 > uint64(len(d.b)) {
		d.failf("%s: vtable offset %d out of range", what, vt)
		return tbl{}, false
	}
	t := tbl{pos: pos, vt: uint64(vt), what: what}
	t.vtLen = uint64(d.u16(t.vt, what))
	t.size = uint64(d.u16(t.vt+2, what))
	switch {
	case d.err != nil:
		return tbl{}, false
	case t.vtLen < 4 || t.vtLen%2 != 0:
		d.failf("%s: bad vtable size %d", what, t.vtLen)
	case t.size < 4:
		d.failf("%s: bad table size %d", what, t.size)
	case t.vt+t.vtLen > uint64(len(d.b)):
		d.failf("%s: its %d-byte vtable at %d runs past the %d-byte program", what, t.vtLen, t.vt, len(d.b))
	case pos+t.size > uint64(len(d.b)):
		d.failf("%s: the %d-byte table at %d runs past the %d-byte program", what, t.size, pos, len(d.b))
	}
	return t, d.err == nil
}

// root locates the buffer's root table.
func (d *dec) root(what string) (tbl, bool) {
	return d.tableAt(uint64(d.u32(0, what)), what)
}

// field returns the absolute position of field id holding width bytes, or
// 0 when the field is absent.
func (d *dec) field(t tbl, id int, width uint64) uint64 {
	if d.err != nil {
		return 0
	}
	o := 4 + 2*uint64(id)
	if o+2 > t.vtLen {
		return 0
	}
	fo := uint64(binary.LittleEndian.Uint16(d.b[t.vt+o:]))
	if fo == 0 {
		return 0
	}
	if fo < 4 || fo+width > t.size {
		d.failf("%s: field %d at %d (+%d) lies outside its %d-byte table", t.what, id, fo, width, t.size)
		return 0
	}
	return t.pos + fo
}

func (d *dec) fU8(t tbl, id int, def uint8) uint8 {
	if p := d.field(t, id, 1); p != 0 {
		return d.b[p]
	}
	return def
}

func (d *dec) fBool(t tbl, id int) bool { return d.fU8(t, id, 0) != 0 }

func (d *dec) fU32(t tbl, id int, def uint32) uint32 {
	if p := d.field(t, id, 4); p != 0 {
		return binary.LittleEndian.Uint32(d.b[p:])
	}
	return def
}

func (d *dec) fI32(t tbl, id int, def int32) int32 { return int32(d.fU32(t, id, uint32(def))) }

func (d *dec) fU64(t tbl, id int, def uint64) uint64 {
	if p := d.field(t, id, 8); p != 0 {
		return binary.LittleEndian.Uint64(d.b[p:])
	}
	return def
}

func (d *dec) fI64(t tbl, id int, def int64) int64 { return int64(d.fU64(t, id, uint64(def))) }

func (d *dec) fF64(t tbl, id int, def float64) float64 {
	if p := d.field(t, id, 8); p != 0 {
		return math.Float64frombits(binary.LittleEndian.Uint64(d.b[p:]))
	}
	return def
}

// ref follows the uoffset stored in field id.
func (d *dec) ref(t tbl, id int) (uint64, bool) {
	p := d.field(t, id, 4)
	if p == 0 {
		return 0, false
	}
	target := p + uint64(binary.LittleEndian.Uint32(d.b[p:]))
	if !d.in(target, 4, t.what) {
		return 0, false
	}
	return target, true
}

// fTable returns the sub-table in field id.
func (d *dec) fTable(t tbl, id int, what string) (tbl, bool) {
	p, ok := d.ref(t, id)
	if !ok {
		return tbl{}, false
	}
	return d.tableAt(p, what)
}

// vecAt locates a vector of elem-byte elements at pos.
func (d *dec) vecAt(pos, elem uint64, what string) (vec, bool) {
	n := uint64(d.u32(pos, what))
	if !d.in(pos+4, n*elem, what) {
		return vec{}, false
	}
	return vec{start: pos + 4, n: n, elem: elem, what: what}, true
}

// fVec returns the vector in field id; an absent field is an empty vector.
func (d *dec) fVec(t tbl, id int, elem uint64, what string) vec {
	p, ok := d.ref(t, id)
	if !ok {
		return vec{what: what, elem: elem}
	}
	v, _ := d.vecAt(p, elem, what)
	return v
}

// fString returns the string in field id ("" when absent).
func (d *dec) fString(t tbl, id int, what string) string {
	v := d.fVec(t, id, 1, what)
	if d.err != nil || !d.spend(v.n/16+1, what) {
		return ""
	}
	return string(d.b[v.start : v.start+v.n])
}

// fBytes returns the position and length of a [ubyte] field.
func (d *dec) fBytes(t tbl, id int, what string) (start, n uint64) {
	v := d.fVec(t, id, 1, what)
	return v.start, v.n
}

// tableIn returns element i of a vector of tables.
func (d *dec) tableIn(v vec, i uint64, what string) (tbl, bool) {
	if d.err != nil || i >= v.n {
		return tbl{}, false
	}
	p := v.start + 4*i
	return d.tableAt(p+uint64(binary.LittleEndian.Uint32(d.b[p:])), what)
}

func (d *dec) i32s(v vec) []int32 {
	if d.err != nil || !d.spend(v.n, v.what) {
		return nil
	}
	out := make([]int32, v.n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(d.b[v.start+4*uint64(i):]))
	}
	return out
}

func (d *dec) i64s(v vec) []int64 {
	if d.err != nil || !d.spend(v.n, v.what) {
		return nil
	}
	out := make([]int64, v.n)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(d.b[v.start+8*uint64(i):]))
	}
	return out
}

func (d *dec) f64s(v vec) []float64 {
	if d.err != nil || !d.spend(v.n, v.what) {
		return nil
	}
	out := make([]float64, v.n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(d.b[v.start+8*uint64(i):]))
	}
	return out
}

func (d *dec) bools(v vec) []bool {
	if d.err != nil || !d.spend(v.n, v.what) {
		return nil
	}
	out := make([]bool, v.n)
	for i := range out {
		out[i] = d.b[v.start+uint64(i)] != 0
	}
	return out
}
