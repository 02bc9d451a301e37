package mlx

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// diagnose explains, from a file's first bytes, why it cannot be a runner
// library for goos/goarch: not a shared library at all, a library of the
// other OS's format, or one built for another CPU. It returns "" when the
// header looks right (the loader's own message then says more). The
// dynamic loader's messages for these cases are often unhelpful (glibc
// reports a foreign-CPU ELF as "No such file or directory").
func diagnose(head []byte, goos, goarch string) string {
	want := archNames[goarch]
	if want == "" {
		want = goarch
	}
	switch {
	case len(head) >= 20 && string(head[:4]) == "\x7fELF":
		if goos == "darwin" {
			return "it is an ELF (Linux) library; macOS needs a Mach-O .dylib"
		}
		var m uint16
		if head[5] == 2 {
			m = binary.BigEndian.Uint16(head[18:20])
		} else {
			m = binary.LittleEndian.Uint16(head[18:20])
		}
		if got, ok := elfMachines[m]; ok && got != want {
			return fmt.Sprintf("it is built for %s, this etchat is %s", got, want)
		} else if !ok {
			return fmt.Sprintf("it is built for ELF machine %d, this etchat is %s", m, want)
		}
		if (head[4] == 1) != (goarch == "386" || goarch == "arm") {
			return fmt.Sprintf("it is a %d-bit library, this etchat is %s", map[byte]int{1: 32, 2: 64}[head[4]], want)
		}
		return ""
	case len(head) >= 8 && (binary.LittleEndian.Uint32(head) == 0xfeedfacf || binary.LittleEndian.Uint32(head) == 0xfeedface):
		if goos != "darwin" {
			return "it is a Mach-O (macOS) library; " + goos + " needs an ELF .so"
		}
		cpu := binary.LittleEndian.Uint32(head[4:8])
		if got, ok := machoCPUs[cpu]; ok && got != want {
			return fmt.Sprintf("it is built for %s, this etchat is %s", got, want)
		} else if !ok {
			return fmt.Sprintf("it is built for Mach-O CPU type %#x, this etchat is %s", cpu, want)
		}
		return ""
	case len(head) >= 4 && binary.BigEndian.Uint32(head) == 0xcafebabe:
		if goos != "darwin" {
			return "it is a macOS universal binary; " + goos + " needs an ELF .so"
		}
		return "" // universal: the loader picks the slice
	case len(head) == 0:
		return "the file is empty"
	}
	return "it is not a shared library (neither ELF nor Mach-O)"
}

var archNames = map[string]string{"amd64": "x86-64", "arm64": "arm64", "386": "x86 (32-bit)", "arm": "arm (32-bit)"}

var elfMachines = map[uint16]string{3: "x86 (32-bit)", 40: "arm (32-bit)", 62: "x86-64", 183: "arm64"}

var machoCPUs = map[uint32]string{7: "x86 (32-bit)", 0x01000007: "x86-64", 12: "arm (32-bit)", 0x0100000c: "arm64"}

// diagnoseFile reads path's header and diagnoses it.
func diagnoseFile(path, goos, goarch string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	return diagnose(head[:n], goos, goarch)
}
