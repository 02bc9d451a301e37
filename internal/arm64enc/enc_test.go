package arm64enc

import "testing"

// TestEncodings holds each encoder to the word GNU as (binutils 2.40,
// aarch64-linux-gnu-as -march=armv8.6-a+i8mm+dotprod) writes for the same
// instruction, read back with objdump -d, and those words agree with the
// encoding diagrams of DDI 0487's instruction pages. Registers vary over
// each field so that a misplaced or masked field shows.
func TestEncodings(t *testing.T) {
	for _, c := range []struct {
		got  Inst
		want uint32
		text string
	}{
		{FMUL4S(1, 2, 3), 0x6e23dc41, "FMUL V1.4S, V2.4S, V3.4S"},
		{FMUL4S(31, 0, 17), 0x6e31dc1f, "FMUL V31.4S, V0.4S, V17.4S"},
		{FADD4S(5, 6, 7), 0x4e27d4c5, "FADD V5.4S, V6.4S, V7.4S"},
		{FSUB4S(5, 6, 7), 0x4ea7d4c5, "FSUB V5.4S, V6.4S, V7.4S"},
		{FADDP4S(9, 10, 11), 0x6e2bd549, "FADDP V9.4S, V10.4S, V11.4S"},
		{FADDPS(3, 4), 0x7e30d883, "FADDP S3, V4.2S"},
		{FCMGT4S(8, 4, 0), 0x6ea0e488, "FCMGT V8.4S, V4.4S, V0.4S"},
		{FCMGT4S(31, 17, 2), 0x6ea2e63f, "FCMGT V31.4S, V17.4S, V2.4S"},
		{SCVTF4S(12, 13), 0x4e21d9ac, "SCVTF V12.4S, V13.4S"},
		{UCVTF4S(10, 11), 0x6e21d96a, "UCVTF V10.4S, V11.4S"},
		{SDOT(14, 15, 16), 0x4e9095ee, "SDOT V14.4S, V15.16B, V16.16B"},
		{SDOT(31, 30, 29), 0x4e9d97df, "SDOT V31.4S, V30.16B, V29.16B"},
		{SMMLA(20, 21, 22), 0x4e96a6b4, "SMMLA V20.4S, V21.16B, V22.16B"},
		{SADDLP4S(1, 2), 0x4e602841, "SADDLP V1.4S, V2.8H"},
	} {
		if c.got.Word != c.want || c.got.Text != c.text {
			t.Errorf("%s: %#08x %q, want %#08x", c.text, c.got.Word, c.got.Text, c.want)
		}
	}
	if d := FADD4S(0, 1, 2).Directive(); d != "WORD $0x4e22d420 // FADD V0.4S, V1.4S, V2.4S" {
		t.Errorf("Directive: %q", d)
	}
}

func TestBadRegister(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("V32 encoded without a panic")
		}
	}()
	FMUL4S(32, 0, 0)
}
