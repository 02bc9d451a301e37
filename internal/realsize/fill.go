package realsize

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
)

// Fill writes a file of the source's exact layout to path: the kept bytes as
// they were, every dropped segment filled with values drawn from its recorded
// statistics (floats: normal with the recorded mean and deviation, clamped to
// the recorded bounds, so quantization scales stay positive and in range;
// packed words: 4-bit fields drawn from the recorded histogram). Each segment
// has its own generator seeded by (seed, segment index), so a fill is
// reproducible and one segment's data does not depend on the others'.
func (s *Skeleton) Fill(path string, seed uint64) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	err = s.fill(out, seed)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

func (s *Skeleton) fill(out *os.File, seed uint64) error {
	if err := out.Truncate(s.Size()); err != nil {
		return err
	}
	for i, r := range s.Manifest.Kept {
		if _, err := out.WriteAt(s.data[s.at[i]:s.at[i]+r.Size], r.Offset); err != nil {
			return err
		}
	}
	buf := make([]byte, 1<<20)
	for _, seg := range s.Manifest.Segments {
		if seg.Kept {
			continue
		}
		if seg.Stats == nil {
			return fmt.Errorf("segment %d is dropped but has no statistics to fill it from", seg.Index)
		}
		gen, err := generator(seg, rand.New(rand.NewPCG(seed, uint64(seg.Index))))
		if err != nil {
			return fmt.Errorf("segment %d: %w", seg.Index, err)
		}
		for off := int64(0); off < seg.Size; off += int64(len(buf)) {
			b := buf[:min(int64(len(buf)), seg.Size-off)]
			gen(b)
			if _, err := out.WriteAt(b, seg.Offset+off); err != nil {
				return err
			}
		}
	}
	return nil
}

// generator returns a function that fills a buffer (a multiple of the
// element width, as every chunk but a segment's last is, and segments are
// whole elements) with seg's kind of values.
func generator(seg Segment, r *rand.Rand) (func([]byte), error) {
	st := seg.Stats
	if st.Nibbles != nil {
		var total int64
		for _, c := range st.Nibbles {
			total += c
		}
		if total == 0 {
			return nil, fmt.Errorf("empty nibble histogram")
		}
		// 4096 entries laid out in proportion to the histogram: a 12-bit
		// draw indexes it, which keeps the fill at a few hundred MB/s.
		var table [4096]byte
		var acc int64
		j := 0
		for v, c := range st.Nibbles {
			acc += c
			for end := int(acc * 4096 / total); j < end; j++ {
				table[j] = byte(v)
			}
		}
		for ; j < 4096; j++ {
			table[j] = 15
		}
		return func(b []byte) {
			var bits uint64
			left := 0
			for i := range b {
				if left < 2 {
					bits, left = r.Uint64(), 5
				}
				lo, hi := table[bits&4095], table[bits>>12&4095]
				bits >>= 24
				left -= 2
				b[i] = lo | hi<<4
			}
		}, nil
	}
	draw := func() float64 {
		v := st.Mean + st.Std*r.NormFloat64()
		return math.Min(st.Max, math.Max(st.Min, v))
	}
	switch seg.DType {
	case "BFloat16":
		return func(b []byte) {
			for i := 0; i+2 <= len(b); i += 2 {
				binary.LittleEndian.PutUint16(b[i:], toBF16(float32(draw())))
			}
		}, nil
	case "Half":
		return func(b []byte) {
			for i := 0; i+2 <= len(b); i += 2 {
				binary.LittleEndian.PutUint16(b[i:], toHalf(float32(draw())))
			}
		}, nil
	case "Float":
		return func(b []byte) {
			for i := 0; i+4 <= len(b); i += 4 {
				binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(draw())))
			}
		}, nil
	}
	return nil, fmt.Errorf("no filler for dtype %s", seg.DType)
}

// toBF16 rounds to nearest even (finite inputs: draws are clamped).
func toBF16(f float32) uint16 {
	u := math.Float32bits(f)
	return uint16((u + 0x7fff + (u >> 16 & 1)) >> 16)
}

// toHalf rounds a finite float32 in fp16's normal range to nearest even;
// smaller magnitudes go to zero, larger saturate (the recorded bounds come
// from fp16 data, so neither happens in a fill).
func toHalf(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	exp := int(u>>23&255) - 127 + 15
	switch {
	case exp <= 0:
		return sign
	case exp >= 31:
		return sign | 0x7bff
	}
	m := u & 0x7fffff
	h := uint32(exp)<<10 | m>>13
	rest := m & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
		h++
	}
	if h >= 0x7c00 {
		return sign | 0x7bff
	}
	return sign | uint16(h)
}
