package mlx

import (
	"debug/macho"
	"fmt"
	"strconv"
	"strings"
)

// lcBuildVersion is LC_BUILD_VERSION, which debug/macho keeps as raw bytes:
// cmd, cmdsize, platform, minos (xxxx.yy.zz in nibbles), sdk, ntools.
const lcBuildVersion = 0x32

// diagnoseMachO says what the loader's message often does not, for a
// Mach-O library on a Mac: a universal binary without a slice for goarch,
// or one whose minimum macOS is newer than host (e.g. "14.5"; "" = not
// known). It returns "" when neither applies or the file cannot be read
// as Mach-O (the header check has spoken then).
func diagnoseMachO(path, goarch, host string) string {
	want := machoCPU(goarch)
	var slice *macho.File
	if fat, err := macho.OpenFat(path); err == nil {
		defer fat.Close()
		var have []string
		for _, a := range fat.Arches {
			have = append(have, cpuName(a.Cpu))
			if a.Cpu == want {
				slice = a.File
			}
		}
		if slice == nil {
			return fmt.Sprintf("it is a universal binary without a %s slice (it has %s)", archNames[goarch], strings.Join(have, ", "))
		}
	} else if f, err := macho.Open(path); err == nil {
		defer f.Close()
		slice = f
	} else {
		return ""
	}
	minos := minOS(slice)
	if minos != "" && host != "" && versionLess(host, minos) {
		return fmt.Sprintf("it needs macOS %s or newer, this Mac runs %s", minos, host)
	}
	return ""
}

func machoCPU(goarch string) macho.Cpu {
	switch goarch {
	case "arm64":
		return macho.CpuArm64
	case "amd64":
		return macho.CpuAmd64
	}
	return 0
}

func cpuName(c macho.Cpu) string {
	if n, ok := machoCPUs[uint32(c)]; ok {
		return n
	}
	return c.String()
}

// minOS is the slice's LC_BUILD_VERSION minimum macOS ("14.0"), or "".
func minOS(f *macho.File) string {
	for _, l := range f.Loads {
		raw := l.Raw()
		if len(raw) < 16 || f.ByteOrder.Uint32(raw) != lcBuildVersion {
			continue
		}
		v := f.ByteOrder.Uint32(raw[12:])
		s := fmt.Sprintf("%d.%d", v>>16, v>>8&0xff)
		if p := v & 0xff; p != 0 {
			s += fmt.Sprintf(".%d", p)
		}
		return s
	}
	return ""
}

// versionLess compares dotted versions numerically ("14.5" < "15.0").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}
