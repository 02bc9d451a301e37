//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/internal/fixtures"
	"etchat/internal/nativelib"
)

// What one call costs on our side of the model, in µs per call (ns/op):
//   - purego: etchat_abi_version, which runs on the calling thread (the
//     Go → C call alone, with the thread pinned as every call pins it);
//   - library-thread: etchat_session_length, a trivial call that goes
//     through the library's thread (the hand-over there and back);
//   - forward1: a one-token forward through Session.Forward over the fake
//     backend (no model: Go's checks, the ABI layer's checks, the
//     hand-over, a 16-float logits copy).
//
// The ABI layer variant runs everywhere a C++ compiler is; the real
// library's variant needs ETCHAT_RUNNER (or a build in build/native):
//
//	go test ./inference/mlx/ -run '^$' -bench RoundTrip -benchtime 20000x

// abiLayerLibOpt is abiLayerLib compiled with optimisation, as the real
// library is: the benchmark measures the layer, not -O0.
func abiLayerLibOpt(tb testing.TB) string {
	return compile(tb, "c++", "abi-O2/"+LibraryName(runtime.GOOS), "-std=c++17", "-O2", "-fvisibility=hidden",
		"-I", filepath.Join("..", "native"),
		filepath.Join("..", "native", "etchat_runner.cpp"), filepath.Join("testdata", "fake_backend.cpp"), "-lpthread")
}

func benchRoundTrips(b *testing.B, s *Session) {
	ctx := context.Background()
	b.Run("purego", func(b *testing.B) {
		for b.Loop() {
			if s.lib.abiVersion() != ABIVersion {
				b.Fatal("abi version")
			}
		}
	})
	b.Run("library-thread", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.lib.length(s.h); err != nil {
				b.Fatal(err)
			}
		}
	})
	cancellable, cancel := context.WithCancel(ctx)
	defer cancel()
	b.Run("forward1", func(b *testing.B) { benchForward1(b, s, ctx) })
	// With a context that can be cancelled the call runs on its own
	// goroutine, so Go can stop waiting on cancel (step.go): its cost.
	b.Run("forward1-cancellable", func(b *testing.B) { benchForward1(b, s, cancellable) })
}

func benchForward1(b *testing.B, s *Session, ctx context.Context) {
	{
		if err := s.Clear(); err != nil {
			b.Fatal(err)
		}
		ids, pos := []int64{3}, []int64{0}
		for b.Loop() {
			if _, err := s.Forward(ctx, ids, pos); err != nil {
				b.Fatal(err)
			}
			if pos[0]++; int(pos[0]) == s.Capacity() {
				if err := s.Clear(); err != nil {
					b.Fatal(err)
				}
				pos[0] = 0
			}
		}
	}
}

func BenchmarkRoundTripABILayer(b *testing.B) {
	e, err := New(Options{Library: abiLayerLibOpt(b)})
	if err != nil {
		b.Fatal(err)
	}
	prog := filepath.Join(b.TempDir(), "model.pte")
	if err := os.WriteFile(prog, []byte("ETCHAT-FAKE vocab=16 "+testCaches+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg := testConfig()
	cfg.Capacity = 1 << 20
	s, err := e.(*Engine).Open(context.Background(), prog, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchRoundTrips(b, s.(*Session))
}

func BenchmarkRoundTripReal(b *testing.B) {
	lib, err := nativelib.Find()
	if err != nil {
		b.Skip("no native library: ", err)
	}
	e, err := New(Options{Library: lib})
	if err != nil {
		b.Fatal(err)
	}
	const name = "llama3-tiny-offgraph"
	info, err := modelinfo.Load(fixtures.PTE(name), modelinfo.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := info.CacheConfig(kvcache.Policy{StorageDType: "fp32", InitialCapacity: -1})
	if err != nil {
		b.Fatal(err)
	}
	s, err := e.(*Engine).Open(context.Background(), fixtures.PTE(name), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchRoundTrips(b, s.(*Session))
}
