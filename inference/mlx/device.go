package mlx

// Header section 5: device.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// CDeviceInfo mirrors etchat_device_info.
type CDeviceInfo struct {
	Kind        [16]byte
	Name        [256]byte
	MemoryBytes int64
}

// DeviceInfo is where the library computes: Kind is "metal", "cuda" or
// "cpu" (engine.DeviceMetal, DeviceCUDA, DeviceCPU); Name and MemoryBytes
// are what MLX reports ("" and 0 where it reports nothing, e.g. the CPU's
// memory).
type DeviceInfo struct {
	Kind        string
	Name        string
	MemoryBytes int64
}

type deviceFuncs struct {
	device          func(out *CDeviceInfo) int32
	setMetallibPath func(path string) int32
	buildStamp      func() string          // optional: nil for a library without it
	kernelCacheDir  func(dir string) int32 // optional
}

func (f *deviceFuncs) bind(l *library) error {
	if err := l.symbol(&f.device, "etchat_device"); err != nil {
		return err
	}
	if l.has("etchat_build_stamp") {
		if err := l.symbol(&f.buildStamp, "etchat_build_stamp"); err != nil {
			return err
		}
	}
	if l.has("etchat_set_kernel_cache_dir") {
		if err := l.symbol(&f.kernelCacheDir, "etchat_set_kernel_cache_dir"); err != nil {
			return err
		}
	}
	return l.symbol(&f.setMetallibPath, "etchat_set_metallib_path")
}

// KernelCacheDir is where MLX's CUDA backend is told to keep the kernels
// it compiles: etchat/mlx-kernels under the user's cache directory
// (os.UserCacheDir), "" when there is none. Without it MLX uses the
// system's temporary folder, which a fresh machine empties: a first prompt
// there spent 42.7 s compiling (docs/cuda-report.md).
func KernelCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil || d == "" {
		return ""
	}
	return filepath.Join(d, "etchat", "mlx-kernels")
}

// setKernelCache gives MLX the kernel cache folder (etchat_set_kernel_cache_dir,
// optional), before the first program: MLX reads it once, at its first JIT.
// Only MLX's CUDA backend uses it; a value the user set in MLX_PTX_CACHE_DIR
// wins.
func (l *library) setKernelCache(dir string) error {
	if l.kernelCacheDir == nil || dir == "" {
		return nil
	}
	if err := l.call("set_kernel_cache_dir", func() int32 { return l.kernelCacheDir(dir) }); err != nil {
		return err
	}
	l.kernelCache = dir
	return nil
}

// stamp is the MLX build the library links ("" if it does not say).
func (l *library) stamp() string {
	if l.buildStamp == nil {
		return ""
	}
	return l.buildStamp()
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// deviceInfo asks the library where MLX computes.
func (l *library) deviceInfo() (DeviceInfo, error) {
	var c CDeviceInfo
	if err := l.call("device", func() int32 { return l.device(&c) }); err != nil {
		return DeviceInfo{}, err
	}
	d := DeviceInfo{Kind: cString(c.Kind[:]), Name: cString(c.Name[:]), MemoryBytes: c.MemoryBytes}
	switch d.Kind {
	case "metal", "cuda", "cpu":
		return d, nil
	}
	return DeviceInfo{}, fmt.Errorf("mlx: the library reports an unknown device kind %q", d.Kind)
}

// startDevice brings MLX's device up (etchat_device does: Metal's device
// and its metallib, a CUDA context) and keeps what the library reports;
// a device MLX cannot start is an error wrapping ErrDevice with MLX's own
// message. Its cost is paid once per process, by every run that loads the
// library (auto included): see docs/native-engine.md.
func (l *library) startDevice() error {
	t0 := time.Now()
	d, err := l.deviceInfo()
	if err != nil {
		return err
	}
	l.dev, l.devStart = d, time.Since(t0)
	return nil
}

// setMetallib tells MLX where mlx.metallib is; it must come before the
// first program is opened.
func (l *library) setMetallib(path string) error {
	return l.call("set_metallib_path", func() int32 { return l.setMetallibPath(path) })
}

// warm runs one decode step on the first off-graph session a GPU library
// opens, then rewinds it: MLX compiles its Metal kernels (MLX_METAL_JIT=ON,
// as ExecuTorch builds it) and CUDA its kernels at their first use, and
// without this the first reply of every --engine mlx run would pay it
// (auto's probe did, only for auto). Chosen over MLX_METAL_JIT=OFF, which
// precompiles every kernel into a larger metallib and a longer build (not
// measured: no Mac here) and leaves ExecuTorch's build setting alone.
// In-graph sessions are not warmed (their cache cannot rewind).
func (l *library) warm(h sessionHandle, vocab int, offGraph bool) error {
	if l.warmed || !offGraph || (l.dev.Kind != "metal" && l.dev.Kind != "cuda") {
		return nil
	}
	buf := make([]float32, vocab)
	if _, err := l.forward(h, []int64{0}, []int64{0}, buf, false, nil); err != nil {
		return fmt.Errorf("mlx: warming the device: %w", err)
	}
	if err := l.rewind(h, 0); err != nil {
		return fmt.Errorf("mlx: warming the device: %w", err)
	}
	l.warmed = true
	return nil
}
