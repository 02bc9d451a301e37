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

// ErrForeignMetallib is wrapped (with ErrDevice) by the error for a
// metallib whose stamp is missing or names another MLX build than the
// library's: MLX is built with MLX_METAL_JIT=ON, so such a file loads and
// then fails late, for some ops only.
var ErrForeignMetallib = errors.New("mlx.metallib is from another MLX build")

// StampSuffix names the file beside mlx.metallib that holds the MLX build
// it came from (scripts/build-native writes it; the library carries the
// same, etchat_build_stamp).
const StampSuffix = ".stamp"

// checkStamp compares the stamp beside the metallib at path with the
// library's own; a library without a stamp checks nothing.
func checkStamp(libStamp, path string) error {
	if libStamp == "" {
		return nil
	}
	b, err := os.ReadFile(path + StampSuffix)
	if err != nil {
		return fmt.Errorf("mlx: %w: %w: %s has no %s beside it (copy both from the same build-native output as the library)",
			ErrDevice, ErrForeignMetallib, path, MetallibName+StampSuffix)
	}
	if got := strings.TrimSpace(string(b)); got != libStamp {
		return fmt.Errorf("mlx: %w: %w: %s is stamped %s, the library %s (copy mlx.metallib and its stamp from the library's own build)",
			ErrDevice, ErrForeignMetallib, path, got, libStamp)
	}
	return nil
}

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
	if err := checkStamp(l.stamp(), abs); err != nil {
		return err
	}
	if err := l.setMetallib(abs); err != nil {
		return err
	}
	l.metallib = abs
	if b, err := os.ReadFile(abs + StampSuffix); err == nil {
		l.metallibTag = strings.TrimSpace(string(b))
	}
	return nil
}
