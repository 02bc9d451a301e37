//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"runtime"

	"github.com/ebitengine/purego"
)

// dlopen loads a shared library, pinning the thread so that the dlerror
// message read on failure belongs to this call.
func dlopen(path string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// dlsym finds a symbol in a library dlopen returned.
func dlsym(handle uintptr, name string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlsym(handle, name)
}

// registerFunc makes fptr (a pointer to a func variable) call the C
// function at addr.
func registerFunc(fptr any, addr uintptr) { purego.RegisterFunc(fptr, addr) }
