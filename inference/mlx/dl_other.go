//go:build !(darwin || linux || freebsd || netbsd)

package mlx

import (
	"fmt"
	"runtime"
)

func dlopen(path string) (uintptr, error) {
	return 0, fmt.Errorf("loading native libraries is not supported on %s", runtime.GOOS)
}

func dlsym(uintptr, string) (uintptr, error) {
	return 0, fmt.Errorf("loading native libraries is not supported on %s", runtime.GOOS)
}

func registerFunc(any, uintptr) {}
