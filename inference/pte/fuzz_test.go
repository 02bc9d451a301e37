package pte

import (
	"encoding/binary"
	"errors"
	"testing"

	"etchat/internal/fixtures"
)

// FuzzOpen feeds Parse the start of a .pte (data) standing for a file of
// len(data)+extra bytes whose remainder is zeros. Seeds are each fixture's
// header and program up to segment_base_offset (which, with the right
// extra, parse successfully: the segments are then virtual zeros) and
// truncations of them; they stay small (5–11 KB), which keeps Go's fuzzer
// fast. Parse must never panic, and anything it accepts must be
// self-consistent.
func FuzzOpen(f *testing.F) {
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3, fixtures.InGraph, fixtures.BenchBF16} {
		b := head(f, name, 48)
		base := int64(binary.LittleEndian.Uint64(b[24:]))
		size := base + int64(binary.LittleEndian.Uint64(b[32:]))
		data := head(f, name, base)
		programSize := int64(binary.LittleEndian.Uint64(b[16:]))
		f.Add(data, uint64(size-base))                 // program, virtual segments
		f.Add(data[:programSize/2], uint64(0))         // cut inside the program
		f.Add(data[:programSize], uint64(size-base)/2) // segments cut short
		f.Add(data[:40], uint64(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, extra uint64) {
		extra %= 1 << 32
		if len(data) < 12 || string(data[8:12]) != "eh00" {
			extra %= 1 << 16 // without an extended header the whole file is the program
		}
		size := int64(len(data)) + int64(extra)
		if len(data) >= 24 && binary.LittleEndian.Uint64(data[16:]) > uint64(len(data))+1<<16 {
			// A program mostly made of virtual zeros only costs time; the
			// header checks for it are covered by the seeds and unit tests.
			return
		}
		pf, err := Parse(&sparse{data: data, size: size}, size)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) && size >= minHeader {
				t.Fatalf("not a FormatError: %v", err)
			}
			return
		}
		if pf.BytesRead() > pf.Header.ProgramSize+headerBytes {
			t.Fatalf("read %d bytes for a %d-byte program", pf.BytesRead(), pf.Header.ProgramSize)
		}
		for i, s := range pf.Segments {
			if s.Offset < 0 || s.Size < 0 || s.Offset+s.Size > size {
				t.Fatalf("segment %d %+v outside the %d-byte file", i, s, size)
			}
		}
		for _, m := range pf.Methods {
			for _, d := range m.Delegates {
				if d.Offset < 0 || d.Offset+d.Size > size {
					t.Fatalf("delegate %+v outside the file", d)
				}
			}
			if m.IsConstant {
				if v, err := pf.Constant(m.Name); err == nil {
					_ = v.String()
				}
			}
		}
		for _, nd := range pf.NamedData {
			if nd.Offset+nd.Size > size {
				t.Fatalf("named data %+v outside the file", nd)
			}
		}
		_ = pf.WeightBytes()
	})
}
