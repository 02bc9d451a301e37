//go:build !cgo

package app

import (
	"context"
	"fmt"
	"os"
)

// Run reports that this build has no window: the GLFW driver needs cgo.
func Run(ctx context.Context, args []string) int {
	if _, err := ParseArgs(args); err != nil {
		fmt.Fprintln(os.Stderr, "etchat:", err)
		return 2
	}
	fmt.Fprintln(os.Stderr, "etchat: this build has no desktop window (it was built with CGO_ENABLED=0); "+
		"rebuild with cgo and the X11/OpenGL headers (scripts/setup), or use the subcommands: etchat help")
	return 1
}
