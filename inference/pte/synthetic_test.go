package pte_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"etchat/inference/pte"
	"etchat/inference/pte/ptetest"
)

func parse(t *testing.T, p ptetest.Program) (*pte.File, error) {
	t.Helper()
	b := ptetest.Build(p)
	return pte.Parse(bytes.NewReader(b), int64(len(b)))
}

func f32s(xs ...float32) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func TestSyntheticConstants(t *testing.T) {
	seg0 := make([]byte, 64)
	copy(seg0[16:], f32s(1.5, -2))                          // buffer 1: Float [2]
	binary.LittleEndian.PutUint64(seg0[32:], uint64(1<<40)) // buffer 2: Long [1]
	binary.LittleEndian.PutUint16(seg0[48:], 0x3fc0)        // buffer 3: BFloat16 1.5
	binary.LittleEndian.PutUint16(seg0[50:], 0xc000)        // -2
	prog := ptetest.Program{
		Segments:        [][]byte{seg0},
		ConstantSegment: &ptetest.ConstantSegment{Index: 0, Offsets: []uint64{0, 16, 32, 48}},
		Methods: []ptetest.Method{
			ptetest.Constant("an_int", ptetest.IntValue(-7)),
			ptetest.Constant("a_double", ptetest.Value{Kind: pte.KindDouble, Double: 0.25}),
			ptetest.Constant("a_bool", ptetest.Value{Kind: pte.KindBool, Bool: true}),
			ptetest.Constant("a_string", ptetest.Value{Kind: pte.KindString, String: "llama"}),
			ptetest.Constant("an_int_list", ptetest.Value{Kind: pte.KindIntList, Ints: []int64{128001, 128009}}),
			ptetest.Constant("a_double_list", ptetest.Value{Kind: pte.KindDoubleList, Doubles: []float64{0.5, 2}}),
			ptetest.Constant("a_float_tensor", ptetest.TensorValue(pte.Float, []int32{2}, 1)),
			ptetest.Constant("a_long_tensor", ptetest.TensorValue(pte.Long, []int32{1}, 2)),
			ptetest.Constant("a_bf16_tensor", ptetest.TensorValue(pte.BFloat16, []int32{1, 2}, 3)),
			ptetest.Constant("no_data", ptetest.TensorValue(pte.Float, []int32{2}, 0)),
			ptetest.Constant("too_big", ptetest.TensorValue(pte.Float, []int32{100}, 3)),
			ptetest.Constant("bad_buffer", ptetest.TensorValue(pte.Float, []int32{1}, 9)),
			ptetest.Constant("negative_size", ptetest.TensorValue(pte.Float, []int32{-1}, 1)),
		},
	}
	f, err := parse(t, prog)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.ConstantNames(); len(got) != len(prog.Methods) {
		t.Fatalf("constant methods %v", got)
	}
	get := func(name string) pte.Value {
		v, err := f.Constant(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	if n, err := get("an_int").Int(); err != nil || n != -7 {
		t.Errorf("an_int %d %v", n, err)
	}
	if x, err := get("a_double").Float(); err != nil || x != 0.25 {
		t.Errorf("a_double %v %v", x, err)
	}
	if b, err := get("a_bool").Bool(); err != nil || !b {
		t.Errorf("a_bool %v %v", b, err)
	}
	if s, err := get("a_string").Text(); err != nil || s != "llama" || get("a_string").String() != `"llama"` {
		t.Errorf("a_string %q %v", s, err)
	}
	if xs, err := get("an_int_list").Ints(); err != nil || len(xs) != 2 || xs[1] != 128009 {
		t.Errorf("an_int_list %v %v", xs, err)
	}
	if xs, err := get("a_double_list").Floats(); err != nil || len(xs) != 2 || xs[0] != 0.5 {
		t.Errorf("a_double_list %v %v", xs, err)
	}
	ft := get("a_float_tensor")
	if xs, err := ft.Floats(); err != nil || len(xs) != 2 || xs[0] != 1.5 || xs[1] != -2 {
		t.Errorf("a_float_tensor %v %v", xs, err)
	}
	if _, err := ft.Ints(); err == nil {
		t.Error("Ints of a float tensor succeeded")
	}
	if tt, err := ft.Tensor(); err != nil || tt.DType != pte.Float || tt.Numel() != 2 || len(tt.Data) != 8 {
		t.Errorf("tensor %+v %v", tt, err)
	}
	if xs, err := get("a_long_tensor").Ints(); err != nil || len(xs) != 1 || xs[0] != 1<<40 {
		t.Errorf("a_long_tensor %v %v", xs, err)
	}
	if xs, err := get("a_bf16_tensor").Floats(); err != nil || len(xs) != 2 || xs[0] != 1.5 || xs[1] != -2 {
		t.Errorf("a_bf16_tensor %v %v", xs, err)
	}
	for name, want := range map[string]string{
		"no_data":       "no constant data",
		"too_big":       "needs 400 bytes but buffer 3 has 16",
		"bad_buffer":    "constant buffer 9 does not exist",
		"negative_size": "negative size",
	} {
		if _, err := f.Constant(name); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

func TestSyntheticDelegatesAndKernels(t *testing.T) {
	blob := []byte("inline delegate payload")
	tensor := ptetest.TensorValue(pte.Float, []int32{1, 4}, 0)
	tensor.Tensor.Dynamism = pte.Static
	forward := ptetest.Method{
		Name:         "forward",
		Values:       []ptetest.Value{tensor, tensor, {Kind: pte.KindNull}},
		Inputs:       []int32{0},
		Outputs:      []int32{1},
		Operators:    []string{"aten::add"},
		Instructions: []ptetest.Instruction{{Index: 0, Args: []int32{0, 1}}, {Kernel: true, Index: 0, Args: []int32{1, 1}}},
		Delegates: []ptetest.Delegate{{ID: "XnnpackBackend", Inline: true, Index: 0,
			CompileSpecs: []ptetest.CompileSpec{{Key: "threads", Value: []byte("4")}}}},
	}
	prog := ptetest.Program{Methods: []ptetest.Method{forward}, InlineDelegateData: [][]byte{blob}}
	f, err := parse(t, prog)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := f.Method("forward")
	if m.IsConstant || m.NumInstructions != 2 || m.DelegateCalls != 1 || len(m.Kernels) != 1 || m.Kernels[0] != "aten::add" {
		t.Errorf("method %+v", m)
	}
	if m.Describe() != "forward(Float[1 4]) -> Float[1 4]" {
		t.Errorf("describe %q", m.Describe())
	}
	d := m.Delegates[0]
	if !d.Inline || d.Segment != -1 || d.Size != int64(len(blob)) || len(d.CompileSpecs) != 1 || string(d.CompileSpecs[0].Value) != "4" {
		t.Fatalf("delegate %+v", d)
	}
	got, err := f.ReadRange(d.Offset, d.Size)
	if err != nil || string(got) != string(blob) {
		t.Errorf("inline blob %q %v", got, err)
	}
	if f.Header.Extended != true || len(f.Segments) != 0 || f.WeightBytes() != 0 {
		t.Errorf("header %+v", f.Header)
	}

	// Broken references, one at a time.
	for _, c := range []struct {
		name string
		edit func(p *ptetest.Program)
		want string
	}{
		{"kernel operator", func(p *ptetest.Program) { p.Methods[0].Instructions[1].Index = 5 }, "names operator 5"},
		{"delegate index", func(p *ptetest.Program) { p.Methods[0].Instructions[0].Index = 3 }, "names delegate 3"},
		{"inline index", func(p *ptetest.Program) { p.Methods[0].Delegates[0].Index = 2 }, "inline data 2, which does not exist"},
		{"segment delegate", func(p *ptetest.Program) { p.Methods[0].Delegates[0].Inline = false }, "segment 0, which does not exist"},
		{"input index", func(p *ptetest.Program) { p.Methods[0].Inputs = []int32{7} }, "input 0 (value 7): value index is out of range (3 values)"},
		{"negative output", func(p *ptetest.Program) { p.Methods[0].Outputs = []int32{-1} }, "out of range"},
		{"unnamed method", func(p *ptetest.Program) { p.Methods[0].Name = "" }, "has no name"},
		{"no methods", func(p *ptetest.Program) { p.Methods = nil }, "no methods"},
		{"unknown scalar type", func(p *ptetest.Program) { p.Methods[0].Values[0].Tensor = &ptetest.Tensor{DType: 99} }, "unknown scalar type 99"},
		{"named data segment", func(p *ptetest.Program) { p.NamedData = []ptetest.NamedData{{Key: "w", Segment: 0}} }, `"w": segment 0 does not exist`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := prog
			p.Methods = append([]ptetest.Method(nil), prog.Methods...)
			if len(p.Methods) > 0 {
				m := p.Methods[0]
				m.Instructions = append([]ptetest.Instruction(nil), m.Instructions...)
				m.Delegates = append([]ptetest.Delegate(nil), m.Delegates...)
				m.Values = append([]ptetest.Value(nil), m.Values...)
				p.Methods[0] = m
			}
			c.edit(&p)
			_, err := parse(t, p)
			if err == nil || !errors.Is(err, pte.ErrFormat) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

func TestSyntheticNoExtendedHeader(t *testing.T) {
	// Without "eh00" the program is the whole file and constant data may be
	// inline (the deprecated constant_buffer).
	prog := ptetest.Program{
		NoExtendedHeader: true,
		ConstantBuffers:  [][]byte{{}, f32s(3, 4)},
		Methods:          []ptetest.Method{ptetest.Constant("scales", ptetest.TensorValue(pte.Float, []int32{2}, 1))},
	}
	f, err := parse(t, prog)
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Extended || f.Header.ProgramSize != f.Size {
		t.Errorf("header %+v", f.Header)
	}
	v, err := f.Constant("scales")
	if xs, ferr := v.Floats(); err != nil || ferr != nil || len(xs) != 2 || xs[1] != 4 {
		t.Errorf("scales %v %v %v", xs, err, ferr)
	}
}

func TestSyntheticAliasingBudget(t *testing.T) {
	// 20000 methods that are all one table with 5000 inputs: a 60 KB
	// program asking for 10^8 value reads. The work budget stops it.
	tensor := ptetest.TensorValue(pte.Float, []int32{1}, 0)
	m := ptetest.Method{Name: "m", Values: []ptetest.Value{tensor}, Inputs: make([]int32, 5000), Outputs: []int32{0}}
	b := ptetest.Build(ptetest.Program{Methods: []ptetest.Method{m}, AliasMethods: 20000})
	if len(b) > 200<<10 {
		t.Fatalf("program of %d bytes", len(b))
	}
	_, err := pte.Parse(bytes.NewReader(b), int64(len(b)))
	if err == nil || !strings.Contains(err.Error(), "too complex") {
		t.Errorf("got %v", err)
	}
	// The same table referenced twice is fine (each reference of this
	// 5,000-input method spends ~15,000 of the ~45,000 units its 20 KB
	// allow).
	b = ptetest.Build(ptetest.Program{Methods: []ptetest.Method{m}, AliasMethods: 2})
	if f, err := pte.Parse(bytes.NewReader(b), int64(len(b))); err != nil || len(f.Methods) != 2 || len(f.Methods[1].Inputs) != 5000 {
		t.Errorf("2 aliases: %v", err)
	}
}
