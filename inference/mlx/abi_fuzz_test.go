//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ebitengine/purego"

	"etchat/internal/fuzzing"
)

// abiBytes hands out fuzz bytes; past the end it gives zeros.
type abiBytes []byte

func (b *abiBytes) u8() uint8 {
	if len(*b) == 0 {
		return 0
	}
	v := (*b)[0]
	*b = (*b)[1:]
	return v
}

func (b *abiBytes) i8() int32 { return int32(int8(b.u8())) }

// i32 is mostly small, sometimes extreme.
func (b *abiBytes) i32() int32 {
	switch v := b.u8(); v {
	case 0x80:
		return -1 << 31
	case 0x7f:
		return 1<<31 - 1
	default:
		return int32(int8(v))
	}
}

func (b *abiBytes) i64() int64 {
	switch v := b.u8(); v {
	case 0x80:
		return -1 << 63
	case 0x7f:
		return 1<<63 - 1
	default:
		return int64(int8(v))
	}
}

// abiConfig decodes a cache config and layers; nil config for a flag.
func abiConfig(b *abiBytes) (*CConfig, []CLayer) {
	flags := b.u8()
	if flags&1 != 0 {
		if flags&2 != 0 {
			return nil, []CLayer{{}} // layers without a config
		}
		return nil, nil
	}
	if flags&2 != 0 { // the valid layout, hostile numbers elsewhere
		return &CConfig{Capacity: b.i32(), InitialCapacity: b.i32(), KVDType: 15, MaxWrite: b.i8()},
			[]CLayer{{0, 0, 2, 8}, {1, b.i32(), 1, 16}, {0, 0, 3, 4}}
	}
	dtypes := []int32{5, 6, 15, 0, -1, 4}
	cfg := &CConfig{Capacity: b.i32(), InitialCapacity: b.i32(), KVDType: dtypes[int(b.u8())%len(dtypes)], MaxWrite: b.i32()}
	layers := make([]CLayer, int(b.u8())%5)
	for i := range layers {
		layers[i] = CLayer{Kind: b.i8() % 3, Window: b.i32(), KVHeads: b.i32(), HeadDim: b.i32()}
	}
	return cfg, layers
}

// FuzzABI drives the real C ABI layer (inference/native/etchat_runner.cpp)
// over the fake backend with hostile arguments, through the raw bound
// functions (none of the Go side's checks): NULL pointers, zero, negative
// and huge counts, ids outside the vocabulary, any positions, stale and
// made-up handles, configs that do not match the program. Every call must
// return a status (an unknown one, a crash or a hang fails), a failure
// must leave an error message and change nothing (length kept), and
// closing everything must leave no live backend objects.
func FuzzABI(f *testing.F) {
	f.Add([]byte{0, 0, 2, 20, 8, 2, 4, 3, 0, 0, 0, 0, 2, 1, 2, 4, 0, 1, 3, 5})
	f.Add([]byte{0, 2, 20, 4, 4, 0, 0, 4, 16, 0, 1, 2, 3, 4, 3, 1, 2, 2, 0x7f, 4, 5, 0x80, 7})
	f.Add([]byte{1, 1, 0, 1, 0, 1, 15, 0, 0, 1, 1, 9, 3, 0, 2, 0xff, 0x80, 6, 5, 1})
	f.Add([]byte{0, 0, 32, 4, 2, 4, 3, 1, 0, 2, 8, 1, 0, 0, 16, 1, 0, 0, 0, 3, 0, 0, 4, 0, 1, 4, 0, 0, 9, 8, 0})
	f.Add([]byte{2, 0, 0, 0, 0, 7, 8, 9, 6})
	f.Add([]byte{0, 0, 0x7f, 0x80, 0, 0x80, 3, 2, 0x80, 0x7f, 0x80, 0, 0, 1, 0x80, 2, 0x7f})

	lib := abiLayerLib(f)
	l, err := bind(lib)
	if err != nil {
		f.Fatal(err)
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		f.Fatal(err)
	}
	var live func() int32
	var takeLog func(buf *byte, capacity int32) int32
	purego.RegisterLibFunc(&live, h, "etchat_fake_live")
	purego.RegisterLibFunc(&takeLog, h, "etchat_fake_take_log")
	logBuf := make([]byte, 1<<16)
	dir := f.TempDir()
	programs := []string{"", filepath.Join(dir, "missing.pte"), dir}
	for i, spec := range []string{"vocab=16 " + testCaches, "vocab=16 ingraph maxctx=8", "vocab=16 dtype=bf16 lastonly " + testCaches,
		"vocab=4 " + testCaches + " throw=3"} {
		p := filepath.Join(dir, "p"+string(rune('0'+i))+".pte")
		if err := os.WriteFile(p, []byte("ETCHAT-FAKE "+spec+"\n"), 0o644); err != nil {
			f.Fatal(err)
		}
		programs = append(programs, p)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		defer fuzzing.Time(len(data))()
		// The last error is per thread.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer takeLog(&logBuf[0], int32(len(logBuf))) // the fake's call log would grow without end
		liveBefore := live()
		b := abiBytes(data)
		check := func(op string, st int32) int32 {
			if st < 0 || Status(st) > StatusDevice {
				t.Fatalf("%s: unknown status %d", op, st)
			}
			if st != 0 && l.lastError() == "" {
				t.Fatalf("%s: status %s without a message", op, Status(st))
			}
			return st
		}

		var prog programHandle
		path := programs[int(b.u8())%len(programs)]
		if check("program_open", l.programOpen(path, &prog)) != 0 {
			prog = programHandle(b.i64()) // a made-up handle
		}
		var vocab int64
		check("program_vocab", l.programVocab(prog, &vocab))
		cfg, layers := abiConfig(&b)
		var lp *CLayer
		if len(layers) > 0 {
			lp = &layers[0]
		}
		var sess sessionHandle
		if check("session_open", l.sessionOpen(prog, cfg, lp, int32(len(layers)), &sess)) != 0 {
			sess = sessionHandle(b.u8()) * 16 // a made-up handle (the registry counts in 16s)
		}
		length := func() int32 {
			var n int32
			if l.sessionLength(sess, &n) != 0 {
				return -1
			}
			return n
		}
		for steps := 0; len(b) > 0 && steps < 64; steps++ {
			before := length()
			switch op := b.u8() % 8; op {
			case 0, 1: // forward
				n := b.i32() % 9
				flags := b.u8()
				size := max(int(n), 1)
				ids, pos := make([]int64, size), make([]int64, size)
				contiguous := flags&0x20 == 0
				for i := range ids {
					ids[i] = b.i64()
					if contiguous {
						pos[i] = int64(max(before, 0)) + int64(i)
					} else {
						pos[i] = b.i64()
					}
				}
				logits := make([]float32, int(b.u8())*2+1)
				var written int64
				ip, pp, lgp, wp := &ids[0], &pos[0], &logits[0], &written
				if flags&1 != 0 {
					ip = nil
				}
				if flags&2 != 0 {
					pp = nil
				}
				if flags&4 != 0 {
					lgp = nil
				}
				if flags&8 != 0 {
					wp = nil
				}
				st := check("forward", l.sessionForward(sess, ip, pp, n, lgp, int64(len(logits)), int32(flags>>4&1), wp))
				switch {
				case st == 0 && (written <= 0 || written > int64(len(logits))):
					t.Fatalf("forward wrote %d floats into %d", written, len(logits))
				case (Status(st) == StatusInvalidArgument || Status(st) == StatusCacheFull) && length() != before:
					t.Fatalf("forward refused (%s) but the length went %d → %d", Status(st), before, length())
				}
			case 2: // rewind
				to := b.i32()
				st := check("rewind", l.sessionRewind(sess, to))
				if st == 0 && length() != to || st != 0 && length() != before {
					t.Fatalf("rewind to %d (status %s): length %d → %d", to, Status(st), before, length())
				}
			case 3:
				if check("clear", l.sessionClear(sess)) == 0 && length() != 0 {
					t.Fatalf("clear left length %d", length())
				}
			case 4:
				var c int32
				check("capacity", l.sessionCapacity(sess, &c))
				if before > c && c > 0 {
					t.Fatalf("length %d above capacity %d", before, c)
				}
			case 5:
				var ok int32
				check("can_extend", l.sessionCanExtend(sess, b.i32(), &ok))
			case 6: // NULL outs
				check("length(NULL)", l.sessionLength(sess, nil))
				check("capacity(NULL)", l.sessionCapacity(sess, nil))
				check("can_extend(NULL)", l.sessionCanExtend(sess, 1, nil))
				check("program_vocab(NULL)", l.programVocab(prog, nil))
				check("program_open(NULL)", l.programOpen(programs[3], nil))
				check("session_open(NULL)", l.sessionOpen(prog, cfg, lp, int32(len(layers)), nil))
			case 7: // close the session (a second close, and calls on it, must fail cleanly)
				check("session_close", l.sessionClose(sess))
			}
		}
		l.sessionClose(sess)
		l.programClose(prog)
		if n := live(); n != liveBefore {
			t.Fatalf("%d live backend objects after closing everything (%d before)", n, liveBefore)
		}
	})
}
