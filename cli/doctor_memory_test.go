package cli

import (
	"strings"
	"testing"

	"etchat/inference/engine"
)

// TestDoctorWorkingSet: doctor names the working set a model must fit in
// and where the library read it, and says nothing for a library that
// cannot say (the C fake of TestDoctor).
func TestDoctorWorkingSet(t *testing.T) {
	var b strings.Builder
	writeMemory(&b, &engine.NativeFacts{MemoryBytes: 32 << 30, WorkingSetBytes: 22 << 30, WorkingSetSource: "max_recommended_working_set_size"})
	want := "device memory:   32.0 GiB (the KV cache and weights share it)\n" +
		"working set:     22.0 GiB (max_recommended_working_set_size; a model's weights and KV cache at capacity must fit in it)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	writeMemory(&b, &engine.NativeFacts{})
	if b.String() != "" {
		t.Errorf("a library that cannot say: %q", b.String())
	}
}
