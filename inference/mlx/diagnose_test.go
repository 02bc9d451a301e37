package mlx

import (
	"encoding/binary"
	"strings"
	"testing"
)

func elfHeader(class, machine int) []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5] = byte(class), 1
	binary.LittleEndian.PutUint16(h[18:], uint16(machine))
	return h
}

func machoHeader(cpu uint32) []byte {
	h := make([]byte, 32)
	binary.LittleEndian.PutUint32(h, 0xfeedfacf)
	binary.LittleEndian.PutUint32(h[4:], cpu)
	return h
}

func TestDiagnose(t *testing.T) {
	fat := []byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2}
	tests := []struct {
		name         string
		head         []byte
		goos, goarch string
		want         string // "" = looks fine
	}{
		{"elf x86-64 on linux/amd64", elfHeader(2, 62), "linux", "amd64", ""},
		{"elf arm64 on linux/amd64", elfHeader(2, 183), "linux", "amd64", "built for arm64, this etchat is x86-64"},
		{"elf x86-64 on linux/arm64", elfHeader(2, 62), "linux", "arm64", "built for x86-64, this etchat is arm64"},
		{"elf unknown machine", elfHeader(2, 999), "linux", "amd64", "ELF machine 999"},
		{"elf 32-bit x86 on amd64", elfHeader(1, 3), "linux", "amd64", "built for x86 (32-bit)"},
		{"elf on macOS", elfHeader(2, 183), "darwin", "arm64", "ELF (Linux) library"},
		{"mach-o arm64 on darwin/arm64", machoHeader(0x0100000c), "darwin", "arm64", ""},
		{"mach-o x86-64 on darwin/arm64", machoHeader(0x01000007), "darwin", "arm64", "built for x86-64, this etchat is arm64"},
		{"mach-o on linux", machoHeader(0x0100000c), "linux", "amd64", "Mach-O (macOS) library"},
		{"universal on darwin", fat, "darwin", "arm64", ""},
		{"universal on linux", fat, "linux", "amd64", "universal binary"},
		{"text", []byte("hello, world, not a library"), "linux", "amd64", "not a shared library"},
		{"empty", nil, "darwin", "arm64", "empty"},
		{"short elf", []byte("\x7fELF\x02"), "linux", "amd64", "not a shared library"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := diagnose(tc.head, tc.goos, tc.goarch)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("diagnose = %q, want %q", got, tc.want)
			}
		})
	}
}
