//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// A device MLX cannot start fails New itself, with MLX's own message and
// ErrDevice, before any program is opened: the fake backend built with
// FAKE_DEVICE_ERROR throws Metal's metallib error when the device is
// brought up and, were a program ever loaded, would fail it with the bare
// "vector" a first Mac run used to show.
func TestDeviceStartsAtLoadWithMLXsReason(t *testing.T) {
	lib := abiLayerLibWith(t, "nodevice", "-DFAKE_DEVICE_ERROR")
	x := loadExtras(t, lib)
	x.log()
	_, err := New(Options{Library: lib})
	if err == nil {
		t.Fatal("New succeeded with a device MLX cannot start")
	}
	if !errors.Is(err, ErrDevice) {
		t.Errorf("error %v does not wrap ErrDevice", err)
	}
	var me *Error
	if !errors.As(err, &me) || me.Status != StatusDevice {
		t.Errorf("error %v: want an *Error with StatusDevice", err)
	}
	msg := err.Error()
	for _, want := range []string{"Can not load metallib", "/fake/mlx.metallib", lib} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "vector") {
		t.Errorf("error %q is the program load's, not the device's", msg)
	}
	log := x.log()
	if !slices.Contains(log, "device") {
		t.Errorf("the device was never brought up: %v", log)
	}
	if slices.ContainsFunc(log, func(l string) bool { return strings.HasPrefix(l, "program_open") }) {
		t.Errorf("a program was opened before the device failed: %v", log)
	}
}

// Once New has brought the device up, a metallib path comes too late and
// is refused (MLX read it when the device was built); the device reported
// is the library's, kept from that call.
func TestDeviceStartRefusesALaterMetallib(t *testing.T) {
	lib := abiLayerLibWith(t, "devicestart")
	e, err := New(Options{Library: lib})
	if err != nil {
		t.Fatal(err)
	}
	eng := e.(*Engine)
	if d := eng.Device(); d != "cpu" {
		t.Errorf("Device() = %q, want the fake backend's cpu", d)
	}
	if d, err := eng.DeviceInfo(); err != nil || d.Name != "fake CPU" {
		t.Errorf("DeviceInfo() = %+v, %v", d, err)
	}
	p := filepath.Join(t.TempDir(), MetallibName)
	if err := os.WriteFile(p, []byte("metallib"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = eng.lib.setMetallib(p)
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "before the device is brought up") {
		t.Errorf("set_metallib_path after the device came up: %v, want refused", err)
	}
}

// A stamped library takes only a metallib stamped alike: one without a
// stamp beside it, or with another, is refused before MLX is given its
// path (ErrForeignMetallib, and ErrDevice for auto's fallback).
func TestMetallibStamp(t *testing.T) {
	lib := compileC(t, "stamped/"+LibraryName(runtime.GOOS), "fake_runner.c", `-DFAKE_STAMP="0123456789abcdef"`)
	l, err := bind(lib)
	if err != nil {
		t.Fatal(err)
	}
	if l.stamp() != "0123456789abcdef" {
		t.Fatalf("stamp %q", l.stamp())
	}
	dir := t.TempDir()
	ml := filepath.Join(dir, MetallibName)
	write(t, ml, "metallib")
	err = configureMetallib(l, []string{ml}, isFile)
	if !errors.Is(err, ErrForeignMetallib) || !errors.Is(err, ErrDevice) || !strings.Contains(err.Error(), "mlx.metallib.stamp") {
		t.Errorf("no stamp: %v", err)
	}
	write(t, ml+StampSuffix, "fedcba9876543210\n")
	err = configureMetallib(l, []string{ml}, isFile)
	if !errors.Is(err, ErrForeignMetallib) || !strings.Contains(err.Error(), "stamped fedcba9876543210, the library 0123456789abcdef") {
		t.Errorf("another stamp: %v", err)
	}
	write(t, ml+StampSuffix, "0123456789abcdef\n")
	if err := configureMetallib(l, []string{ml}, isFile); err != nil {
		t.Errorf("the same stamp: %v", err)
	}
	// An unstamped library checks nothing (Linux builds, older ones).
	plain, err := bind(fakeLib(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkStamp(plain.stamp(), filepath.Join(t.TempDir(), MetallibName)); err != nil {
		t.Errorf("unstamped library: %v", err)
	}
}

// On a GPU the first off-graph session runs one decode step and rewinds it
// when it opens (the kernels' first-use compilation leaves the first
// reply), once per library; on the CPU nothing is warmed.
func TestWarmsTheGPUOnce(t *testing.T) {
	lib := abiLayerLibWith(t, "metal", `-DFAKE_DEVICE_KIND="metal"`)
	e := newEngine(t, lib)
	if e.Device() != "metal" {
		t.Fatalf("device %q", e.Device())
	}
	x := loadExtras(t, lib)
	x.log()
	ctx := context.Background()
	s, err := e.Open(ctx, writeProgram(t, "vocab=16"), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 0 {
		t.Errorf("Len %d after the warm-up, want 0", s.Len())
	}
	log := x.log()
	if i := slices.Index(log, "forward_1"); i < 0 || !slices.Contains(log[i:], "rewind") && !slices.Contains(log[i:], "clear") {
		t.Errorf("no warm-up step on the GPU: %v", log)
	}
	s.Close()
	e.CloseIdle()
	s2, err := e.Open(ctx, writeProgram(t, "vocab=16"), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if log := x.log(); slices.Contains(log, "forward_1") {
		t.Errorf("warmed twice: %v", log)
	}

	cpu := newEngine(t, abiLayerLibWith(t, "devicestart"))
	y := loadExtras(t, cpu.LibraryPath())
	y.log()
	s3, err := cpu.Open(ctx, writeProgram(t, "vocab=16"), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if log := y.log(); slices.ContainsFunc(log, func(l string) bool { return strings.HasPrefix(l, "forward") }) {
		t.Errorf("warmed on the CPU: %v", log)
	}
}
