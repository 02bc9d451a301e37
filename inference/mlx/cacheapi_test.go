package mlx

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheAPIDetection runs inference/native/cache_api.cmake (the adapter
// choice CMakeLists.txt makes) on both ExecuTorch cache-API variants: the
// pinned commit's real header, and the renamed API (CacheFactory, ...),
// for which no ExecuTorch could be fetched, so a header with its
// declarations stands in.
func TestCacheAPIDetection(t *testing.T) {
	cmake, err := exec.LookPath("cmake")
	if err != nil {
		t.Skip("no cmake on PATH")
	}
	script, err := filepath.Abs(filepath.Join("..", "native", "cache_api.cmake"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(header, adapterDir string) (string, error) {
		args := []string{"-DETCHAT_CACHE_HEADER=" + header}
		if adapterDir != "" {
			args = append(args, "-DETCHAT_ADAPTER_DIR="+adapterDir)
		}
		out, err := exec.Command(cmake, append(args, "-P", script)...).CombinedOutput()
		return strings.Join(strings.Fields(string(out)), " "), err
	}

	t.Run("pinned cff6f4dd", func(t *testing.T) {
		archive := filepath.Join("..", "..", "..", "shared", "native-src", "executorch-cff6f4dd.tar.xz")
		if _, err := os.Stat(archive); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true and no %s", archive)
			}
			t.Skipf("no %s", archive)
		}
		if out, err := exec.Command("tar", "-xJf", archive, "-C", dir, "--wildcards", "*extension/llm/cache/cache_registry.h").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v\n%s", err, out)
		}
		out, err := run(filepath.Join(dir, "executorch", "extension", "llm", "cache", "cache_registry.h"), "")
		if err != nil || !strings.Contains(out, "cache-api=builder-registry adapter=cache_adapter_cff6f4d.cpp") {
			t.Errorf("%v: %s", err, out)
		}
	})

	renamed := write("renamed.h", `namespace executorch::extension::llm::cache {
namespace kind { inline constexpr const char* kSingle = "single"; }
class CacheFactory {
 public:
  static CacheFactory& global();
};
class InstallGuard;
}
`)
	t.Run("renamed API, no adapter yet", func(t *testing.T) {
		out, err := run(renamed, "")
		if err == nil || !strings.Contains(out, `has ExecuTorch's "factory" cache API`) ||
			!strings.Contains(out, filepath.Join("inference", "native", "cache_adapter_factory.cpp")) {
			t.Errorf("want a stop naming the adapter to write; got %v: %s", err, out)
		}
	})
	t.Run("renamed API, adapter present", func(t *testing.T) {
		adapters := filepath.Join(dir, "adapters")
		os.MkdirAll(adapters, 0o755)
		os.WriteFile(filepath.Join(adapters, "cache_adapter_factory.cpp"), nil, 0o644)
		out, err := run(renamed, adapters)
		if err != nil || !strings.Contains(out, "cache-api=factory adapter=cache_adapter_factory.cpp") {
			t.Errorf("%v: %s", err, out)
		}
	})
	t.Run("neither", func(t *testing.T) {
		out, err := run(write("other.h", "class CacheBuilderRegistryV2;\nclass Something {};\n"), "")
		if err == nil || !strings.Contains(out, "declares neither CacheBuilderRegistry") || !strings.Contains(out, "cache_adapter_<commit>.cpp") {
			t.Errorf("%v: %s", err, out)
		}
	})
}
