package bench

import (
	"os"
	"runtime"
	"testing"
)

func TestParseSysctl(t *testing.T) {
	for in, want := range map[string]string{
		"Apple M2 Pro\n": "Apple M2 Pro",
		"Apple M1\n":     "Apple M1",
		"Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz      \n": "Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz",
		"machdep.cpu.brand_string: Apple M3 Max\n":         "Apple M3 Max",
		"34359738368\n": "34359738368",
		"":              "",
	} {
		if got := ParseSysctl(in); got != want {
			t.Errorf("ParseSysctl(%q) = %q, want %q", in, got, want)
		}
	}
}

const x86CPUInfo = `processor	: 0
vendor_id	: GenuineIntel
cpu family	: 6
model		: 143
model name	: Intel(R) Xeon(R) Platinum 8480+
stepping	: 8

processor	: 1
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Platinum 8480+

`

const armCPUInfo = `processor	: 0
BogoMIPS	: 243.75
Features	: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer	: 0x41
CPU architecture: 8
CPU variant	: 0x3
CPU part	: 0xd0c

processor	: 1
CPU implementer	: 0x41
CPU part	: 0xd0c

processor	: 2
CPU part	: 0xd0c
`

const piCPUInfo = `processor	: 0
model name	: ARMv7 Processor rev 3 (v7l)
Hardware	: BCM2835
Model		: Raspberry Pi 4 Model B Rev 1.4
`

func TestParseCPUInfo(t *testing.T) {
	for _, c := range []struct {
		in    string
		model string
		n     int
	}{
		{x86CPUInfo, "Intel(R) Xeon(R) Platinum 8480+", 2},
		{armCPUInfo, "ARM implementer 0x41 part 0xd0c", 3},
		{piCPUInfo, "ARMv7 Processor rev 3 (v7l)", 1},
		{"", "", 0},
	} {
		m, n := ParseCPUInfo(c.in)
		if m != c.model || n != c.n {
			t.Errorf("got %q %d, want %q %d", m, n, c.model, c.n)
		}
	}
}

func TestParseMemInfo(t *testing.T) {
	in := "MemFree:         1000 kB\nMemTotal:       24503212 kB\nMemAvailable:   23000000 kB\n"
	if got := ParseMemInfo(in); got != 24503212*1024 {
		t.Errorf("MemTotal %d", got)
	}
	if got := ParseMemInfo("MemTotal: lots\n"); got != 0 {
		t.Errorf("garbage %d", got)
	}
	if got := ParseMemInfo(""); got != 0 {
		t.Errorf("empty %d", got)
	}
}

func TestDetectMachine(t *testing.T) {
	m := DetectMachine()
	if m.Cores != runtime.NumCPU() || m.OS != runtime.GOOS || m.Arch != runtime.GOARCH {
		t.Errorf("%+v", m)
	}
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/proc/meminfo"); err == nil && m.RAMBytes <= 0 {
			t.Errorf("RAM not read: %+v", m)
		}
	}
}
