//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// TestOneLibraryThread: every backend call (where ExecuTorch and MLX run)
// happens on one thread owned by the library, whichever OS threads call
// in. MLX's streams are per thread: a session loaded on one thread and run
// on another fails (on a Mac, and on Linux's CPU build).
func TestOneLibraryThread(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	x := loadExtras(t, e.LibraryPath())
	prog := writeProgram(t, "vocab=16")

	// Open on one locked thread (distinct programs: nothing is reused)...
	var sessions []*Session
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for range 4 {
			s, err := e.lib.openProgram(prog)
			if err != nil {
				done <- err
				return
			}
			c, ls, _ := ToC(testConfig())
			h, err := e.lib.openSession(s, &c, ls)
			e.lib.closeProgram(s)
			if err != nil {
				done <- err
				return
			}
			sessions = append(sessions, &Session{lib: e.lib, h: h, vocab: 16})
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// ...drive each from several other locked threads...
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	drive := func(s *Session, g int) {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := range 25 {
			s.mu.Lock() // one step at a time per session, each from its length
			n, err := s.lib.length(s.h)
			if err == nil {
				_, err = s.lib.forward(s.h, []int64{int64(g)}, []int64{int64(n)}, make([]float32, 16), false, nil)
			}
			if err == nil && i%5 == 4 {
				err = s.lib.rewind(s.h, int32(n))
			}
			if err == nil && i%10 == 9 {
				err = s.lib.clear(s.h)
			}
			s.mu.Unlock()
			if err != nil {
				errs <- fmt.Errorf("thread %d step %d: %w", g, i, err)
				return
			}
		}
		var callerIsOne int32
		if x.threads(&callerIsOne); callerIsOne != 0 {
			errs <- fmt.Errorf("a backend call ran on calling thread %d", g)
		}
	}
	for _, s := range sessions {
		for g := range 3 {
			wg.Add(1)
			go drive(s, g)
		}
	}
	wg.Wait()
	// ...and close each from yet another.
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := s.lib.closeSession(s.h); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var callerIsOne int32
	if n := x.threads(&callerIsOne); n != 1 || callerIsOne != 0 {
		t.Errorf("backend calls ran on %d threads (the test's own among them: %v), want 1: the library's", n, callerIsOne != 0)
	}
}
