package cpu

import "testing"

// TestWithoutSIMD runs fixture references and kernel tests again with the
// assembly kernels switched off, as on an amd64 CPU without AVX2 (or
// GODEBUG=cpu.avx2=off): the Go fallbacks are then the engine, and a
// dispatcher that skips elements when its kernel is off (widenBF16 once
// did) would fail here rather than on a user's machine.
func TestWithoutSIMD(t *testing.T) {
	defer setSIMD(false)() // amd64's AVX2 and AVX-512, arm64's NEON
	for name, test := range map[string]func(*testing.T){
		"WidenBF16": TestWidenBF16, "MatmulRows": TestMatmulRows, "Elementwise": TestElementwiseBitIdentical,
		"Attend": TestAttendBitIdentical, "KVDTypes": TestKVDTypes, "QuantizedKVDTypes": TestQuantizedKVDTypes,
	} {
		t.Run(name, test)
	}
}
