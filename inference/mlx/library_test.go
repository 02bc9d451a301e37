package mlx

import (
	"reflect"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestCandidates(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		exe  string
		goos string
		want []string
	}{
		{
			name: "env override is the only candidate",
			env:  map[string]string{"ETCHAT_RUNNER": "/x/y/libcustom.dylib"},
			exe:  "/Applications/etchat.app/Contents/MacOS/etchat",
			goos: "darwin",
			want: []string{"/x/y/libcustom.dylib"},
		},
		{
			name: "blank override is ignored",
			env:  map[string]string{"ETCHAT_RUNNER": "  "},
			exe:  "/usr/local/bin/etchat",
			goos: "linux",
			want: []string{
				"/usr/local/bin/libetchat_runner.so",
				"/usr/local/lib/libetchat_runner.so",
				"/usr/lib/libetchat_runner.so",
				"/usr/lib64/libetchat_runner.so",
			},
		},
		{
			name: "app bundle: beside the executable, then Contents/Frameworks",
			exe:  "/Applications/etchat.app/Contents/MacOS/etchat",
			goos: "darwin",
			want: []string{
				"/Applications/etchat.app/Contents/MacOS/libetchat_runner.dylib",
				"/Applications/etchat.app/Contents/Frameworks/libetchat_runner.dylib",
				"/Applications/etchat.app/Contents/lib/libetchat_runner.dylib",
				"/opt/homebrew/lib/libetchat_runner.dylib",
				"/usr/local/lib/libetchat_runner.dylib",
			},
		},
		{
			name: "plain macOS binary in a prefix",
			exe:  "/opt/homebrew/bin/etchat",
			goos: "darwin",
			want: []string{
				"/opt/homebrew/bin/libetchat_runner.dylib",
				"/opt/homebrew/Frameworks/libetchat_runner.dylib",
				"/opt/homebrew/lib/libetchat_runner.dylib",
				"/usr/local/lib/libetchat_runner.dylib",
			},
		},
		{
			name: "linux prefix install: ../lib deduplicated against /usr/local/lib",
			exe:  "/usr/local/bin/etchat",
			goos: "linux",
			want: []string{
				"/usr/local/bin/libetchat_runner.so",
				"/usr/local/lib/libetchat_runner.so",
				"/usr/lib/libetchat_runner.so",
				"/usr/lib64/libetchat_runner.so",
			},
		},
		{
			name: "unknown executable: prefixes only",
			goos: "darwin",
			want: []string{
				"/opt/homebrew/lib/libetchat_runner.dylib",
				"/usr/local/lib/libetchat_runner.dylib",
			},
		},
		{
			name: "nil env and an OS without prefixes",
			exe:  "/home/u/etchat",
			goos: "plan9",
			want: []string{"/home/u/libetchat_runner.so", "/home/lib/libetchat_runner.so"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var env func(string) string
			if tc.env != nil {
				env = envOf(tc.env)
			}
			got := Candidates(env, tc.exe, tc.goos)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Candidates(%v, %q, %q)\n got %q\nwant %q", tc.env, tc.exe, tc.goos, got, tc.want)
			}
		})
	}
}

func TestLibraryName(t *testing.T) {
	for goos, want := range map[string]string{
		"darwin": "libetchat_runner.dylib", "linux": "libetchat_runner.so", "windows": "etchat_runner.dll",
	} {
		if got := LibraryName(goos); got != want {
			t.Errorf("LibraryName(%q) = %q, want %q", goos, got, want)
		}
	}
}
