package mlxgraph

import (
	"encoding/binary"
	"fmt"
	"math"
)

// reader is a bounds-checked flatbuffer reader over one buffer. Errors are
// sticky: after the first failure every accessor returns zero values and
// the first error is reported by Parse.
type reader struct {
	b   []byte
	err error
	// budget is how many more vector elements may be decoded. Vectors may
	// overlap in a hostile buffer, so without it a small input could
	// claim a quadratic number of elements; a real graph decodes each
	// element about once.
	budget int
}

func newReader(b []byte) *reader { return &reader{b: b, budget: 4*len(b) + 1024} }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *reader) in(pos, n int) bool {
	if r.err != nil {
		return false
	}
	if pos < 0 || n < 0 || pos > len(r.b) || n > len(r.b)-pos {
		r.fail("offset %d (+%d) outside the %d-byte flatbuffer", pos, n, len(r.b))
		return false
	}
	return true
}

func (r *reader) u8(pos int) uint8 {
	if !r.in(pos, 1) {
		return 0
	}
	return r.b[pos]
}

func (r *reader) u16(pos int) uint16 {
	if !r.in(pos, 2) {
		return 0
	}
	return binary.LittleEndian.Uint16(r.b[pos:])
}

func (r *reader) u32(pos int) uint32 {
	if !r.in(pos, 4) {
		return 0
	}
	return binary.LittleEndian.Uint32(r.b[pos:])
}

func (r *reader) u64(pos int) uint64 {
	if !r.in(pos, 8) {
		return 0
	}
	return binary.LittleEndian.Uint64(r.b[pos:])
}

// table is a flatbuffer table: its position and its vtable.
type table struct {
	r     *reader
	name  string
	pos   int
	vt    int
	vtLen int
}

// table reads the table at pos.
func (r *reader) table(pos int, name string) table {
	t := table{r: r, name: name}
	if !r.in(pos, 4) {
		return t
	}
	vt := int64(pos) - int64(int32(r.u32(pos)))
	if vt < 0 || vt > int64(len(r.b))-4 {
		r.fail("%s: vtable offset out of range", name)
		return t
	}
	vtLen := int(r.u16(int(vt)))
	objLen := int(r.u16(int(vt) + 2))
	if vtLen < 4 || vtLen%2 != 0 || !r.in(int(vt), vtLen) || !r.in(pos, objLen) {
		r.fail("%s: malformed vtable", name)
		return t
	}
	t.pos, t.vt, t.vtLen = pos, int(vt), vtLen
	return t
}

// field is the absolute position of field id, or -1 when absent.
func (t table) field(id int) int {
	if t.r.err != nil || t.vtLen == 0 {
		return -1
	}
	o := 4 + 2*id
	if o+2 > t.vtLen {
		return -1
	}
	off := int(t.r.u16(t.vt + o))
	if off == 0 {
		return -1
	}
	return t.pos + off
}

func (t table) has(id int) bool { return t.field(id) >= 0 }

func (t table) u8(id int, def uint8) uint8 {
	if p := t.field(id); p >= 0 {
		return t.r.u8(p)
	}
	return def
}

func (t table) i8(id int, def int8) int8 { return int8(t.u8(id, uint8(def))) }

func (t table) boolean(id int, def bool) bool {
	d := uint8(0)
	if def {
		d = 1
	}
	return t.u8(id, d) != 0
}

func (t table) u32(id int, def uint32) uint32 {
	if p := t.field(id); p >= 0 {
		return t.r.u32(p)
	}
	return def
}

func (t table) i32(id int, def int32) int32 { return int32(t.u32(id, uint32(def))) }

func (t table) i64(id int, def int64) int64 {
	if p := t.field(id); p >= 0 {
		return int64(t.r.u64(p))
	}
	return def
}

func (t table) f32(id int, def float32) float32 {
	if p := t.field(id); p >= 0 {
		return math.Float32frombits(t.r.u32(p))
	}
	return def
}

func (t table) f64(id int, def float64) float64 {
	if p := t.field(id); p >= 0 {
		return math.Float64frombits(t.r.u64(p))
	}
	return def
}

// optI32 and friends read null-defaulted scalars.
func (t table) optI32(id int) *int32 {
	if !t.has(id) {
		return nil
	}
	v := t.i32(id, 0)
	return &v
}

func (t table) optF32(id int) *float32 {
	if !t.has(id) {
		return nil
	}
	v := t.f32(id, 0)
	return &v
}

func (t table) optI8(id int) *int8 {
	if !t.has(id) {
		return nil
	}
	v := t.i8(id, 0)
	return &v
}

// ref follows the offset stored in field id; -1 when absent.
func (t table) ref(id int) int {
	p := t.field(id)
	if p < 0 {
		return -1
	}
	off := t.r.u32(p)
	if t.r.err != nil {
		return -1
	}
	target := int64(p) + int64(off)
	if target >= int64(len(t.r.b)) {
		t.r.fail("%s: field %d points outside the buffer", t.name, id)
		return -1
	}
	return int(target)
}

func (t table) required(id int, what string) bool {
	if t.r.err != nil {
		return false
	}
	if !t.has(id) {
		t.r.fail("%s: required field %s is missing", t.name, what)
		return false
	}
	return true
}

// sub reads a sub-table; ok is false when absent.
func (t table) sub(id int, name string) (table, bool) {
	p := t.ref(id)
	if p < 0 {
		return table{r: t.r, name: name}, false
	}
	st := t.r.table(p, name)
	return st, t.r.err == nil
}

// str reads a string field.
func (t table) str(id int) string {
	p := t.ref(id)
	if p < 0 {
		return ""
	}
	n := int(t.r.u32(p))
	if !t.r.in(p+4, n) {
		return ""
	}
	return string(t.r.b[p+4 : p+4+n])
}

// vec returns the start and length of a vector field whose elements are
// elem bytes wide; n is 0 when absent.
func (t table) vec(id, elem int) (start, n int) {
	p := t.ref(id)
	if p < 0 {
		return 0, 0
	}
	cnt := t.r.u32(p)
	if t.r.err != nil {
		return 0, 0
	}
	if uint64(cnt)*uint64(elem) > uint64(len(t.r.b)-p-4) {
		t.r.fail("%s: vector field %d claims %d elements, more than the buffer holds", t.name, id, cnt)
		return 0, 0
	}
	if t.r.budget -= int(cnt); t.r.budget < 0 {
		t.r.fail("%s: the flatbuffer's vectors claim more elements in total than it can hold (overlapping vectors?)", t.name)
		return 0, 0
	}
	return p + 4, int(cnt)
}

// tables reads a vector of tables.
func (t table) tables(id int, name string) []table {
	start, n := t.vec(id, 4)
	out := make([]table, 0, n)
	for i := 0; i < n && t.r.err == nil; i++ {
		p := start + 4*i
		target := int64(p) + int64(t.r.u32(p))
		if target >= int64(len(t.r.b)) {
			t.r.fail("%s: element %d points outside the buffer", name, i)
			break
		}
		out = append(out, t.r.table(int(target), name))
	}
	return out
}

func (t table) i32s(id int) []int32 {
	start, n := t.vec(id, 4)
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(t.r.u32(start + 4*i))
	}
	return out
}

func (t table) u8s(id int) []uint8 {
	start, n := t.vec(id, 1)
	out := make([]uint8, n)
	for i := range out {
		out[i] = t.r.u8(start + i)
	}
	return out
}
