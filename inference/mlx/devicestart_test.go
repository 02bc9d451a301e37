//go:build darwin || linux || freebsd || netbsd

package mlx

import (
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
