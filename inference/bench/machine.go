package bench

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes the computer a benchmark ran on. It is stored with
// every run as JSON.
type Machine struct {
	CPU      string `json:"cpu"`       // model name, e.g. "Intel(R) Xeon(R) …" or "Apple M2 Pro"
	Chip     string `json:"chip"`      // macOS: machdep.cpu.brand_string; else ""
	Cores    int    `json:"cores"`     // logical CPUs
	RAMBytes int64  `json:"ram_bytes"` // physical memory; 0 unknown
	OS       string `json:"os"`        // GOOS
	Arch     string `json:"arch"`      // GOARCH
	GPU      string `json:"gpu"`       // on a Mac the chip (its GPU); else ""
}

// DetectMachine reads this computer's description: /proc/cpuinfo and
// /proc/meminfo on Linux, sysctl on macOS. Unknown fields stay empty.
func DetectMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	switch runtime.GOOS {
	case "linux":
		if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
			m.CPU, _ = ParseCPUInfo(string(b))
		}
		if b, err := os.ReadFile("/proc/meminfo"); err == nil {
			m.RAMBytes = ParseMemInfo(string(b))
		}
	case "darwin":
		m.Chip = ParseSysctl(sysctl("machdep.cpu.brand_string"))
		m.CPU, m.GPU = m.Chip, m.Chip
		if n, err := strconv.ParseInt(ParseSysctl(sysctl("hw.memsize")), 10, 64); err == nil {
			m.RAMBytes = n
		}
	}
	return m
}

func sysctl(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sysctl", "-n", name).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// ParseSysctl reads the output of `sysctl -n NAME`: the value, trimmed of
// the trailing newline and of padding (Intel Macs pad the brand string).
// It also accepts `sysctl NAME` output ("name: value").
func ParseSysctl(out string) string {
	line, _, _ := strings.Cut(strings.TrimLeft(out, " \t\r\n"), "\n")
	line = strings.TrimSpace(line)
	if k, v, ok := strings.Cut(line, ": "); ok && strings.Contains(k, ".") && !strings.Contains(k, " ") {
		line = strings.TrimSpace(v)
	}
	return strings.Join(strings.Fields(line), " ")
}

// ParseCPUInfo reads /proc/cpuinfo: the CPU model (x86's "model name",
// or on ARM "Hardware"/"Model", else the CPU part as hex) and the number of
// "processor" entries.
func ParseCPUInfo(text string) (model string, processors int) {
	var hardware, part, implementer string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.Join(strings.Fields(v), " ")
		switch k {
		case "processor":
			processors++
		case "model name", "cpu model":
			if model == "" {
				model = v
			}
		case "Hardware", "Model":
			if hardware == "" {
				hardware = v
			}
		case "CPU part":
			if part == "" {
				part = v
			}
		case "CPU implementer":
			if implementer == "" {
				implementer = v
			}
		}
	}
	switch {
	case model != "":
	case hardware != "":
		model = hardware
	case part != "":
		model = "ARM implementer " + implementer + " part " + part
	}
	return model, processors
}

// ParseMemInfo reads MemTotal from /proc/meminfo, in bytes (0 when absent).
func ParseMemInfo(text string) int64 {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "MemTotal" {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		if len(f) > 1 && strings.EqualFold(f[1], "kB") {
			n *= 1024
		}
		return n
	}
	return 0
}
