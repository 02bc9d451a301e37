package mlx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvMetallib names the environment variable that overrides the search for
// mlx.metallib: when set, it is the only path tried.
const EnvMetallib = "ETCHAT_METALLIB"

// MetallibName is the file of Metal kernels MLX loads at its first use of
// the GPU.
const MetallibName = "mlx.metallib"

// ErrNoMetallib is wrapped by the error returned on macOS when no
// candidate path holds mlx.metallib.
var ErrNoMetallib = errors.New("mlx.metallib not found")

// MetallibCandidates is where mlx.metallib is looked for, for the runner
// library at lib, on goos; nil where MLX loads no metallib (every OS but
// macOS). It touches nothing.
//
// Left to itself, MLX looks beside the binary holding its code (our
// library), then in Resources/ there, then at a path inside the build tree
// compiled into it, which hides a missing copy on the build machine and
// fails everywhere else. So etchat finds the file itself and hands MLX the
// path (etchat_set_metallib_path):
//
//  1. $ETCHAT_METALLIB, if set: the only candidate.
//  2. In an app bundle, the library sits in X.app/Contents/Frameworks/ (code
//     only: codesign and notarization refuse other files there) and the
//     metallib in X.app/Contents/Resources/.
//  3. Beside the library (a build folder, a prefix install's lib/).
//  4. Resources/ beside the library (MLX's own second place).
func MetallibCandidates(env func(string) string, lib, goos string) []string {
	if goos != "darwin" {
		return nil
	}
	if env != nil {
		if p := strings.TrimSpace(env(EnvMetallib)); p != "" {
			return []string{p}
		}
	}
	dir := filepath.Dir(filepath.Clean(lib))
	var out []string
	if filepath.Base(dir) == "Frameworks" && filepath.Base(filepath.Dir(dir)) == "Contents" {
		out = append(out, filepath.Join(filepath.Dir(dir), "Resources", MetallibName))
	}
	return append(out, filepath.Join(dir, MetallibName), filepath.Join(dir, "Resources", MetallibName))
}

// FindMetallib is the first candidate that is a regular file (exists
// reports that; os.Stat in use), or an error wrapping ErrNoMetallib that
// names every path tried. It returns "" and no error when there are no
// candidates (no metallib needed).
func FindMetallib(candidates []string, exists func(string) bool) (string, error) {
	for _, p := range candidates {
		if exists(p) {
			return p, nil
		}
	}
	if len(candidates) == 0 {
		return "", nil
	}
	return "", fmt.Errorf("mlx: %w; tried:\n  %s\n(copy it from the ExecuTorch build beside libetchat_runner, or into the app's Contents/Resources, or set %s)",
		ErrNoMetallib, strings.Join(candidates, "\n  "), EnvMetallib)
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// configureMetallib finds mlx.metallib for l among candidates and tells
// the library, before any program is opened.
func configureMetallib(l *library, candidates []string, exists func(string) bool) error {
	p, err := FindMetallib(candidates, exists)
	if err != nil || p == "" {
		return err
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return fmt.Errorf("mlx: %s: %w", p, err)
	}
	return l.setMetallib(abs)
}
