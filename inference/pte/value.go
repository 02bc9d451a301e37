package pte

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxConstantBytes bounds the tensor data a constant method may return
// (constant methods publish small per-layer arrays).
const maxConstantBytes = 4 << 20

// Tensor is a constant tensor with its data read.
type Tensor struct {
	DType ScalarType
	Sizes []int64
	Data  []byte // little-endian elements, numel × DType.Size() bytes
}

// Numel is the number of elements.
func (t *Tensor) Numel() int64 {
	n := int64(1)
	for _, s := range t.Sizes {
		n *= s
	}
	return n
}

// Ints converts an integer tensor's elements.
func (t *Tensor) Ints() ([]int64, error) {
	if !t.DType.IsInteger() && t.DType != Bool {
		return nil, fmt.Errorf("tensor of %s is not an integer tensor", t.DType)
	}
	sz := t.DType.Size()
	out := make([]int64, len(t.Data)/sz)
	for i := range out {
		p := t.Data[i*sz:]
		switch t.DType {
		case Byte, Bool:
			out[i] = int64(p[0])
		case Char:
			out[i] = int64(int8(p[0]))
		case Short:
			out[i] = int64(int16(binary.LittleEndian.Uint16(p)))
		case UInt16:
			out[i] = int64(binary.LittleEndian.Uint16(p))
		case Int:
			out[i] = int64(int32(binary.LittleEndian.Uint32(p)))
		case UInt32:
			out[i] = int64(binary.LittleEndian.Uint32(p))
		case Long:
			out[i] = int64(binary.LittleEndian.Uint64(p))
		case UInt64:
			u := binary.LittleEndian.Uint64(p)
			if u > math.MaxInt64 {
				return nil, fmt.Errorf("element %d (%d) does not fit in int64", i, u)
			}
			out[i] = int64(u)
		}
	}
	return out, nil
}

// Floats converts a floating-point tensor's elements (Float, Double, Half,
// BFloat16).
func (t *Tensor) Floats() ([]float64, error) {
	sz := t.DType.Size()
	switch t.DType {
	case Float, Double, Half, BFloat16:
	default:
		return nil, fmt.Errorf("tensor of %s is not a floating-point tensor", t.DType)
	}
	out := make([]float64, len(t.Data)/sz)
	for i := range out {
		p := t.Data[i*sz:]
		switch t.DType {
		case Float:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(p)))
		case Double:
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(p))
		case BFloat16:
			out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(p)) << 16))
		case Half:
			out[i] = halfToFloat(binary.LittleEndian.Uint16(p))
		}
	}
	return out, nil
}

func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

// Value is a constant method's result. Kind says which accessor applies;
// the others return an error naming the method and both kinds.
type Value struct {
	Kind   ValueKind
	Method string

	i      int64
	f      float64
	b      bool
	s      string
	ints   []int64
	floats []float64
	bools  []bool
	tensor *Tensor
}

func (v Value) wrong(want string) error {
	what := v.Kind.String()
	if v.Kind == KindTensor && v.tensor != nil {
		what = fmt.Sprintf("a Tensor of %s, sizes %v", v.tensor.DType, v.tensor.Sizes)
	}
	return fmt.Errorf("constant method %q returns %s, not %s", v.Method, what, want)
}

// Int is an Int value.
func (v Value) Int() (int64, error) {
	if v.Kind != KindInt {
		return 0, v.wrong("an Int")
	}
	return v.i, nil
}

// Ints is an IntList, or the elements of an integer tensor.
func (v Value) Ints() ([]int64, error) {
	switch {
	case v.Kind == KindIntList:
		return v.ints, nil
	case v.Kind == KindTensor && v.tensor != nil && v.tensor.DType.IsInteger():
		return v.tensor.Ints()
	}
	return nil, v.wrong("a list of integers")
}

// Float is a Double value.
func (v Value) Float() (float64, error) {
	if v.Kind != KindDouble {
		return 0, v.wrong("a Double")
	}
	return v.f, nil
}

// Floats is a DoubleList, or the elements of a floating-point tensor.
func (v Value) Floats() ([]float64, error) {
	switch {
	case v.Kind == KindDoubleList:
		return v.floats, nil
	case v.Kind == KindTensor && v.tensor != nil:
		if f, err := v.tensor.Floats(); err == nil {
			return f, nil
		}
	}
	return nil, v.wrong("a list of floats")
}

// Bool is a Bool value.
func (v Value) Bool() (bool, error) {
	if v.Kind != KindBool {
		return false, v.wrong("a Bool")
	}
	return v.b, nil
}

// Text is a String value. (String formats any value for display.)
func (v Value) Text() (string, error) {
	if v.Kind != KindString {
		return "", v.wrong("a String")
	}
	return v.s, nil
}

// Tensor is a Tensor value with its data.
func (v Value) Tensor() (*Tensor, error) {
	if v.Kind != KindTensor || v.tensor == nil {
		return nil, v.wrong("a Tensor")
	}
	return v.tensor, nil
}

// Any is the value as a plain Go value: int64, float64, bool, string,
// []int64, []float64, []bool, or for a tensor its elements as []int64 or
// []float64 (nil for other dtypes).
func (v Value) Any() any {
	switch v.Kind {
	case KindInt:
		return v.i
	case KindDouble:
		return v.f
	case KindBool:
		return v.b
	case KindString:
		return v.s
	case KindIntList, KindTensorList, KindOptionalTensorList:
		return v.ints
	case KindDoubleList:
		return v.floats
	case KindBoolList:
		return v.bools
	case KindTensor:
		if x, err := v.Ints(); err == nil {
			return x
		}
		if x, err := v.Floats(); err == nil {
			return x
		}
	}
	return nil
}

// String formats the value for display: 128, [2 2 2 2], "text".
func (v Value) String() string {
	switch v.Kind {
	case KindString:
		return strconv.Quote(v.s)
	case KindNone, KindNull:
		return "None"
	case KindTensor:
		if v.tensor != nil {
			if x := v.Any(); x != nil {
				return fmt.Sprint(x)
			}
			return fmt.Sprintf("<%s tensor %v>", v.tensor.DType, v.tensor.Sizes)
		}
	}
	if x := v.Any(); x != nil {
		return fmt.Sprint(x)
	}
	return "<" + v.Kind.String() + ">"
}

// MarshalJSON writes the plain value (see Any).
func (v Value) MarshalJSON() ([]byte, error) { return json.Marshal(v.Any()) }

// ConstantNames lists the constant methods in file order.
func (f *File) ConstantNames() []string {
	var out []string
	for _, m := range f.Methods {
		if m.IsConstant {
			out = append(out, m.Name)
		}
	}
	return out
}

// Constant evaluates the constant method name, reading tensor data from the
// constant segment. A missing method or one that is not constant is an
// error naming the file.
func (f *File) Constant(name string) (Value, error) {
	m, ok := f.Method(name)
	if !ok {
		return Value{}, f.wrap(fmt.Errorf("no method %q", name))
	}
	if !m.IsConstant || m.constant == nil {
		return Value{}, f.wrap(fmt.Errorf("method %q is not a constant method (%d inputs, %d instructions, %d outputs)",
			name, len(m.Inputs), m.NumInstructions, len(m.Outputs)))
	}
	rv := m.constant
	v := Value{Kind: rv.kind, Method: name, i: rv.i, f: rv.f, b: rv.b, s: rv.s, ints: rv.ints, floats: rv.floats, bools: rv.bools}
	if rv.kind == KindTensor {
		t, err := f.constantTensor(name, rv)
		if err != nil {
			return Value{}, err
		}
		v.tensor = t
	}
	return v, nil
}

func (f *File) constantTensor(name string, rv *rawValue) (*Tensor, error) {
	esize := int64(rv.dtype.Size())
	if esize == 0 {
		return nil, f.errf("constant method %q: tensor of unknown scalar type %d", name, int(rv.dtype))
	}
	n := int64(1)
	for _, s := range rv.sizes {
		if s < 0 {
			return nil, f.errf("constant method %q: tensor has negative size %v", name, rv.sizes)
		}
		if s != 0 && n > maxConstantBytes/esize/s {
			return nil, f.errf("constant method %q: tensor %v of %s is larger than %d bytes", name, rv.sizes, rv.dtype, maxConstantBytes)
		}
		n *= s
	}
	nbytes := n * esize
	if rv.dataIdx == 0 {
		return nil, f.errf("constant method %q: tensor has no constant data (data_buffer_idx 0)", name)
	}
	k := int(rv.dataIdx)
	var off, avail int64
	switch {
	case len(f.ConstantBuffers) > 0:
		if k >= len(f.ConstantBuffers) {
			return nil, f.errf("constant method %q: constant buffer %d does not exist (%d buffers)", name, k, len(f.ConstantBuffers))
		}
		off, avail = f.ConstantBuffers[k].Offset, f.ConstantBuffers[k].Size
	case f.ConstantSegment >= 0:
		if k >= len(f.ConstantOffsets) {
			return nil, f.errf("constant method %q: constant buffer %d does not exist (%d offsets in the constant segment)", name, k, len(f.ConstantOffsets))
		}
		seg := f.Segments[f.ConstantSegment]
		off = seg.Offset + int64(f.ConstantOffsets[k])
		avail = seg.Size - int64(f.ConstantOffsets[k])
	default:
		return nil, f.errf("constant method %q: the program has no constant data", name)
	}
	if nbytes > avail {
		return nil, f.errf("constant method %q: tensor %v of %s needs %d bytes but buffer %d has %d", name, rv.sizes, rv.dtype, nbytes, k, avail)
	}
	data, err := f.readAt(off, nbytes)
	if err != nil {
		return nil, err
	}
	return &Tensor{DType: rv.dtype, Sizes: append([]int64(nil), rv.sizes...), Data: data}, nil
}

// Describe is a one-line summary of a method's signature, e.g.
// "forward(Long[1 32], Long[32]) -> Float[1 32 128256]".
func (m *Method) Describe() string {
	var b strings.Builder
	b.WriteString(m.Name)
	b.WriteByte('(')
	for i, in := range m.Inputs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(in.String())
	}
	b.WriteString(") -> ")
	for i, out := range m.Outputs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(out.String())
	}
	return b.String()
}

// MarshalJSON writes value and kind, and for a tensor dtype, sizes and
// dynamism.
func (t TensorInfo) MarshalJSON() ([]byte, error) {
	if t.Kind != KindTensor {
		return json.Marshal(struct {
			Value int       `json:"value"`
			Kind  ValueKind `json:"kind"`
		}{t.Value, t.Kind})
	}
	sizes := t.Sizes
	if sizes == nil {
		sizes = []int64{}
	}
	type plain TensorInfo
	p := plain(t)
	p.Sizes = sizes
	return json.Marshal(p)
}

// String is "Float[1 32 128256]" for a tensor, the kind otherwise.
func (t TensorInfo) String() string {
	if t.Kind != KindTensor {
		return t.Kind.String()
	}
	s := make([]string, len(t.Sizes))
	for i, x := range t.Sizes {
		s[i] = strconv.FormatInt(x, 10)
	}
	dyn := ""
	if t.Dynamism == DynamicBound {
		dyn = "≤"
	} else if t.Dynamism == DynamicUnbound {
		dyn = "?"
	}
	return t.DType.String() + dyn + "[" + strings.Join(s, " ") + "]"
}
