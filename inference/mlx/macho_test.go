package mlx

import (
	"debug/macho"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// thinMachO is a minimal 64-bit Mach-O dylib for cpu whose LC_BUILD_VERSION
// says minos (major, minor).
func thinMachO(cpu macho.Cpu, major, minor uint32) []byte {
	b := make([]byte, 32+24)
	le := binary.LittleEndian
	le.PutUint32(b, macho.Magic64)
	le.PutUint32(b[4:], uint32(cpu))
	le.PutUint32(b[12:], uint32(macho.TypeDylib))
	le.PutUint32(b[16:], 1)  // ncmds
	le.PutUint32(b[20:], 24) // sizeofcmds
	c := b[32:]
	le.PutUint32(c, lcBuildVersion)
	le.PutUint32(c[4:], 24)
	le.PutUint32(c[8:], 1) // macOS
	le.PutUint32(c[12:], major<<16|minor<<8)
	le.PutUint32(c[16:], major<<16|minor<<8)
	return b
}

// fatMachO is a universal binary of the given thin slices.
func fatMachO(slices ...[]byte) []byte {
	be := binary.BigEndian
	head := 8 + 20*len(slices)
	off := (head + 4095) &^ 4095
	b := make([]byte, head)
	be.PutUint32(b, macho.MagicFat)
	be.PutUint32(b[4:], uint32(len(slices)))
	var body []byte
	for i, s := range slices {
		a := b[8+20*i:]
		be.PutUint32(a, binary.LittleEndian.Uint32(s[4:]))
		be.PutUint32(a[8:], uint32(off+len(body)))
		be.PutUint32(a[12:], uint32(len(s)))
		be.PutUint32(a[16:], 12)
		body = append(body, s...)
		for len(body)%4096 != 0 {
			body = append(body, 0)
		}
	}
	out := append(b, make([]byte, off-head)...)
	return append(out, body...)
}

// A fat dylib without an arm64 slice, and a dylib whose minimum macOS is
// newer than the Mac's, are named as such (the loader's messages for both
// are opaque); a fitting one passes.
func TestDiagnoseMachO(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		file []byte
		host string
		want string
	}{
		{"fat x86-64 only", fatMachO(thinMachO(macho.CpuAmd64, 14, 0)), "14.5", "universal binary without a arm64 slice (it has x86-64)"},
		{"fat with arm64", fatMachO(thinMachO(macho.CpuAmd64, 14, 0), thinMachO(macho.CpuArm64, 14, 0)), "14.5", ""},
		{"fat arm64 needs 15", fatMachO(thinMachO(macho.CpuArm64, 15, 0)), "14.5", "needs macOS 15.0 or newer, this Mac runs 14.5"},
		{"thin needs 26", thinMachO(macho.CpuArm64, 26, 0), "15.7.1", "needs macOS 26.0 or newer, this Mac runs 15.7.1"},
		{"thin 14.0 on 14.0", thinMachO(macho.CpuArm64, 14, 0), "14.0", ""},
		{"host unknown", thinMachO(macho.CpuArm64, 26, 0), "", ""},
		{"not mach-o", []byte("hello"), "14.5", ""},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		if err := os.WriteFile(p, c.file, 0o644); err != nil {
			t.Fatal(err)
		}
		got := diagnoseMachO(p, "arm64", c.host)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if versionLess("14.10", "14.9") || !versionLess("14.9", "14.10") {
		t.Error("versionLess compares as text")
	}
}
