package nativelib

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestCandidates(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		name string
		env  map[string]string
		root string
		goos string
		want []string
	}{
		{"override wins", map[string]string{Env: " /x/lib.so "}, "/repo", "linux", []string{"/x/lib.so"}},
		{"linux build folder", nil, "/repo", "linux", []string{"/repo/build/native/libetchat_runner.so", "/repo/build/native/lib/libetchat_runner.so"}},
		{"darwin build folder", nil, "/repo", "darwin", []string{"/repo/build/native/libetchat_runner.dylib", "/repo/build/native/lib/libetchat_runner.dylib"}},
		{"no root", nil, "", "linux", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Candidates(env(c.env), c.root, c.goos); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestModuleRoot(t *testing.T) {
	root := ModuleRoot(".")
	if root == "" {
		t.Fatal("no go.mod above the package")
	}
	if got := ModuleRoot(filepath.Join(root, "internal", "nativelib")); got != root {
		t.Errorf("ModuleRoot from inside = %q, want %q", got, root)
	}
}
