package pte

import (
	"fmt"
	"strconv"
)

// ScalarType is ExecuTorch's element type number (schema/scalar_type.fbs).
type ScalarType int

// The scalar types ExecuTorch defines.
const (
	Byte            ScalarType = 0
	Char            ScalarType = 1
	Short           ScalarType = 2
	Int             ScalarType = 3
	Long            ScalarType = 4
	Half            ScalarType = 5
	Float           ScalarType = 6
	Double          ScalarType = 7
	Bool            ScalarType = 11
	QInt8           ScalarType = 12
	QUInt8          ScalarType = 13
	QInt32          ScalarType = 14
	BFloat16        ScalarType = 15
	QUInt4x2        ScalarType = 16
	QUInt2x4        ScalarType = 17
	Bits16          ScalarType = 22
	Float8E5M2      ScalarType = 23
	Float8E4M3FN    ScalarType = 24
	Float8E5M2FNUZ  ScalarType = 25
	Float8E4M3FNUZ  ScalarType = 26
	UInt16          ScalarType = 27
	UInt32          ScalarType = 28
	UInt64          ScalarType = 29
	scalarTypeCount            = 30
)

var scalarNames = [scalarTypeCount]string{
	Byte: "Byte", Char: "Char", Short: "Short", Int: "Int", Long: "Long", Half: "Half", Float: "Float",
	Double: "Double", Bool: "Bool", QInt8: "QInt8", QUInt8: "QUInt8", QInt32: "QInt32", BFloat16: "BFloat16",
	QUInt4x2: "QUInt4x2", QUInt2x4: "QUInt2x4", Bits16: "Bits16", Float8E5M2: "Float8_e5m2",
	Float8E4M3FN: "Float8_e4m3fn", Float8E5M2FNUZ: "Float8_e5m2fnuz", Float8E4M3FNUZ: "Float8_e4m3fnuz",
	UInt16: "UInt16", UInt32: "UInt32", UInt64: "UInt64",
}

var scalarSizes = [scalarTypeCount]int{
	Byte: 1, Char: 1, Short: 2, Int: 4, Long: 8, Half: 2, Float: 4, Double: 8, Bool: 1, QInt8: 1, QUInt8: 1,
	QInt32: 4, BFloat16: 2, QUInt4x2: 1, QUInt2x4: 1, Bits16: 2, Float8E5M2: 1, Float8E4M3FN: 1,
	Float8E5M2FNUZ: 1, Float8E4M3FNUZ: 1, UInt16: 2, UInt32: 4, UInt64: 8,
}

// Valid reports whether t is a scalar type ExecuTorch defines.
func (t ScalarType) Valid() bool {
	return t >= 0 && t < scalarTypeCount && scalarNames[t] != ""
}

// String is ExecuTorch's name for the type ("Float", "BFloat16", "Long", …).
func (t ScalarType) String() string {
	if t.Valid() {
		return scalarNames[t]
	}
	return "ScalarType(" + strconv.Itoa(int(t)) + ")"
}

// Size is the bytes of one element (0 for an unknown type).
func (t ScalarType) Size() int {
	if t.Valid() {
		return scalarSizes[t]
	}
	return 0
}

// IsInteger reports whether t holds plain integers (not quantized).
func (t ScalarType) IsInteger() bool {
	switch t {
	case Byte, Char, Short, Int, Long, UInt16, UInt32, UInt64:
		return true
	}
	return false
}

// Dynamism is a tensor's shape dynamism (TensorShapeDynamism).
type Dynamism int

// The shape dynamisms.
const (
	Static         Dynamism = 0 // sizes are exact
	DynamicBound   Dynamism = 1 // sizes are upper bounds
	DynamicUnbound Dynamism = 2 // sizes mean nothing
)

func (d Dynamism) String() string {
	switch d {
	case Static:
		return "static"
	case DynamicBound:
		return "dynamic_bound"
	case DynamicUnbound:
		return "dynamic_unbound"
	}
	return "dynamism(" + strconv.Itoa(int(d)) + ")"
}

// MarshalText writes the name, so JSON shows "dynamic_bound".
func (d Dynamism) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// MarshalText writes the name, so JSON shows "Float".
func (t ScalarType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// ValueKind is the type of a program value (an EValue's KernelTypes tag).
type ValueKind int

// The value kinds, numbered as the schema's union tags.
const (
	KindNone               ValueKind = 0
	KindNull               ValueKind = 1
	KindInt                ValueKind = 2
	KindBool               ValueKind = 3
	KindDouble             ValueKind = 4
	KindTensor             ValueKind = 5
	KindString             ValueKind = 6
	KindIntList            ValueKind = 7
	KindDoubleList         ValueKind = 8
	KindBoolList           ValueKind = 9
	KindTensorList         ValueKind = 10
	KindOptionalTensorList ValueKind = 11
)

var kindNames = [...]string{"None", "Null", "Int", "Bool", "Double", "Tensor", "String", "IntList", "DoubleList",
	"BoolList", "TensorList", "OptionalTensorList"}

func (k ValueKind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "ValueKind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText writes the name.
func (k ValueKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a name written by MarshalText.
func (t *ScalarType) UnmarshalText(b []byte) error {
	for i, n := range scalarNames {
		if n != "" && n == string(b) {
			*t = ScalarType(i)
			return nil
		}
	}
	return fmt.Errorf("unknown scalar type %q", b)
}

// UnmarshalText reads a name written by MarshalText.
func (d *Dynamism) UnmarshalText(b []byte) error {
	for _, x := range []Dynamism{Static, DynamicBound, DynamicUnbound} {
		if x.String() == string(b) {
			*d = x
			return nil
		}
	}
	return fmt.Errorf("unknown shape dynamism %q", b)
}

// UnmarshalText reads a name written by MarshalText.
func (k *ValueKind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n == string(b) {
			*k = ValueKind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown value kind %q", b)
}
