// Package realsize makes real-size .pte programs on a machine that never held
// the real file: Strip keeps an export's program, constant segment, MLX
// delegate graph and small constants (the "skeleton") and records, for every
// weight segment it drops, its size, the dtype and shape the graph gives it and
// statistics of its values; Fill writes a file of the original layout back from
// the skeleton, the dropped segments filled with seeded random data of those
// dtypes and statistics. The program and graph are then the exporter's own by
// construction, byte for byte, and only the weight values differ.
//
// Why: a Llama-3.2-1B-shaped 4-bit export is 663 MiB and cannot come back from
// the machine that exports it (64 MiB return per call); its skeleton is a few
// hundred KiB.
package realsize

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"etchat/inference/mlxgraph"
	"etchat/inference/pte"
)

// Format names the manifest layout; Load refuses any other.
const Format = "etchat-realsize-skeleton/1"

// DefaultKeepBelow is the segment size under which Strip keeps a weight
// segment's bytes: RMSNorm weights (all ones in a random-init export),
// rotary inv_freq and scalar constants carry the values the graph's numerics
// depend on, and together they are a few KiB.
const DefaultKeepBelow = 16 << 10

// Manifest describes a skeleton: the source file, the byte ranges of it the
// skeleton holds (concatenated in this order), and every segment.
type Manifest struct {
	Format   string    `json:"format"`
	Source   Source    `json:"source"`
	Kept     []Range   `json:"kept"`
	Segments []Segment `json:"segments"`
}

// Source is the file the skeleton was cut from.
type Source struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Range is a byte range of the source file.
type Range struct {
	Offset int64 `json:"offset"`
	Size   int64 `json:"size"`
}

// Segment is one of the source's segments.
type Segment struct {
	Index  int    `json:"index"`
	Offset int64  `json:"offset"` // absolute file offset
	Size   int64  `json:"size"`
	Role   string `json:"role"` // "constant", "delegate", "weight", "other"
	Kept   bool   `json:"kept"`
	// Keys are the named_data entries stored in this segment (several when
	// the exporter stored identical bytes once).
	Keys []string `json:"keys,omitempty"`
	// DType and Shape are the graph's tensor_meta for the first key.
	DType string  `json:"dtype,omitempty"`
	Shape []int64 `json:"shape,omitempty"`
	// Stats are the dropped bytes' statistics (nil where kept).
	Stats *Stats `json:"stats,omitempty"`
}

// Stats summarise a dropped segment's values, enough to fill it with data of
// the same range: floats by their moments and bounds, packed integer words by
// the histogram of their 4-bit fields (MLX packs 4-bit weights eight to a
// uint32, least significant first).
type Stats struct {
	Count   int64      `json:"count"`
	Min     float64    `json:"min,omitempty"`
	Max     float64    `json:"max,omitempty"`
	Mean    float64    `json:"mean,omitempty"`
	Std     float64    `json:"std,omitempty"`
	Nibbles *[16]int64 `json:"nibbles,omitempty"`
}

// Strip reads the .pte at path and returns its manifest and skeleton bytes.
// Segments of at least keepBelow bytes that hold named weights are dropped;
// the program, the constant segment, delegate blobs and everything smaller
// are kept.
func Strip(path string, keepBelow int64) (*Manifest, []byte, error) {
	f, err := pte.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	g, err := graphOf(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	sum, err := hashFile(path)
	if err != nil {
		return nil, nil, err
	}
	m := &Manifest{Format: Format, Source: Source{Name: baseName(path), Size: f.Size, SHA256: sum}}
	roles, keys := segmentRoles(f)
	m.Kept = append(m.Kept, Range{0, f.Header.SegmentBaseOffset})
	for i, s := range f.Segments {
		seg := describeSegment(g, Segment{Index: i, Offset: s.Offset, Size: s.Size, Role: roles[i], Keys: keys[i]})
		seg.Kept = seg.Role != "weight" || s.Size < keepBelow
		if seg.Kept {
			m.Kept = append(m.Kept, Range{s.Offset, s.Size})
		} else if seg.Stats, err = dropped(f, seg); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		m.Segments = append(m.Segments, seg)
	}
	var skel []byte
	for _, r := range m.Kept {
		b, err := f.ReadRange(r.Offset, r.Size)
		if err != nil {
			return nil, nil, err
		}
		skel = append(skel, b...)
	}
	return m, skel, nil
}

// segmentRoles names each segment's role (the constant segment, a
// delegate's blob, named weights) and the named-data keys it holds.
func segmentRoles(f *pte.File) (map[int]string, map[int][]string) {
	roles := map[int]string{}
	if f.ConstantSegment >= 0 {
		roles[f.ConstantSegment] = "constant"
	}
	for _, me := range f.Methods {
		for _, d := range me.Delegates {
			if !d.Inline && d.Segment >= 0 {
				roles[d.Segment] = "delegate"
			}
		}
	}
	keys := map[int][]string{}
	for _, nd := range f.NamedData {
		keys[nd.Segment] = append(keys[nd.Segment], nd.Key)
		if roles[nd.Segment] == "" {
			roles[nd.Segment] = "weight"
		}
	}
	return roles, keys
}

// describeSegment gives seg the role "other" when it has none, and the
// dtype and shape the graph records for its first key.
func describeSegment(g *mlxgraph.Graph, seg Segment) Segment {
	if seg.Role == "" {
		seg.Role = "other"
	}
	if len(seg.Keys) == 0 {
		return seg
	}
	sl, ok := g.Slot(seg.Keys[0])
	if !ok || !sl.IsTensor() {
		return seg
	}
	if meta := g.Meta(mlxgraph.Tid(sl.Idx)); meta != nil {
		seg.DType = pte.ScalarType(meta.DType).String()
		for _, d := range meta.Shape {
			seg.Shape = append(seg.Shape, d.Value)
		}
	}
	return seg
}

// dropped reads a segment Strip drops and returns its values' statistics.
func dropped(f *pte.File, seg Segment) (*Stats, error) {
	if seg.DType == "" {
		return nil, fmt.Errorf("segment %d (%d bytes, keys %v) has no dtype in the graph's tensor_meta, so it could not be refilled", seg.Index, seg.Size, seg.Keys)
	}
	r, err := f.SegmentReader(seg.Index)
	if err != nil {
		return nil, err
	}
	st, err := statsOf(r, seg.DType)
	if err != nil {
		return nil, fmt.Errorf("segment %d: %w", seg.Index, err)
	}
	return st, nil
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// graphOf parses the first MLX delegate's graph.
func graphOf(f *pte.File) (*mlxgraph.Graph, error) {
	for _, me := range f.Methods {
		if len(me.Delegates) == 0 {
			continue
		}
		d := me.Delegates[0]
		blob, err := f.ReadRange(d.Offset, d.Size)
		if err != nil {
			return nil, err
		}
		return mlxgraph.Parse(blob)
	}
	return nil, errors.New("no delegate: not an MLX export")
}

// statsOf reads a segment's values as dtype.
func statsOf(r io.Reader, dtype string) (*Stats, error) {
	st := &Stats{Min: math.Inf(1), Max: math.Inf(-1)}
	var sum, sum2 float64
	buf := make([]byte, 1<<20)
	var conv func([]byte) float64
	width := 0
	switch dtype {
	case "BFloat16":
		width, conv = 2, func(b []byte) float64 {
			return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
		}
	case "Half":
		width, conv = 2, func(b []byte) float64 { return float64(halfToFloat(binary.LittleEndian.Uint16(b))) }
	case "Float":
		width, conv = 4, func(b []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) }
	case "UInt32", "Byte", "Char", "QUInt4x2":
		st.Nibbles = new([16]int64)
		st.Min, st.Max = 0, 0
	default:
		return nil, fmt.Errorf("no statistics (and so no filler) for dtype %s", dtype)
	}
	for {
		n, err := io.ReadFull(r, buf)
		b := buf[:n]
		if st.Nibbles != nil {
			for _, c := range b {
				st.Nibbles[c&15]++
				st.Nibbles[c>>4]++
			}
			st.Count += int64(n)
		} else {
			if n%width != 0 {
				return nil, fmt.Errorf("%d bytes is not a whole number of %s values", n, dtype)
			}
			for i := 0; i < n; i += width {
				v := conv(b[i:])
				sum += v
				sum2 += v * v
				st.Min = math.Min(st.Min, v)
				st.Max = math.Max(st.Max, v)
			}
			st.Count += int64(n / width)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if st.Nibbles == nil {
		if st.Count == 0 {
			return nil, errors.New("empty segment")
		}
		st.Mean = sum / float64(st.Count)
		st.Std = math.Sqrt(math.Max(0, sum2/float64(st.Count)-st.Mean*st.Mean))
	}
	return st, nil
}

// halfToFloat converts IEEE fp16 bits.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 31
	frac := uint32(h) & 1023
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: frac·2^-24
		v := float32(frac) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 31:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// Write stores the manifest as dir/name.manifest.json and the skeleton
// gzipped as dir/name.skeleton.gz.
func Write(dir, name string, m *Manifest, skel []byte) error {
	js, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(dir+"/"+name+".manifest.json", append(js, '\n'), 0o644); err != nil {
		return err
	}
	out, err := os.Create(dir + "/" + name + ".skeleton.gz")
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestCompression)
	if _, err := zw.Write(skel); err != nil {
		out.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Skeleton is a loaded skeleton: a ReaderAt over the source's whole size that
// serves the kept bytes and zeros elsewhere, so pte.Parse and the graph
// readers work on it as on the real file.
type Skeleton struct {
	Manifest *Manifest
	data     []byte
	at       []int64 // data offset of each kept range
}

// Load reads a manifest and its skeleton, checking that they agree.
func Load(manifestPath, skeletonPath string) (*Skeleton, error) {
	js, err := os.ReadFile(manifestPath)
	if err != nil {
		return nil, err
	}
	m := new(Manifest)
	if err := json.Unmarshal(js, m); err != nil {
		return nil, fmt.Errorf("%s: %w", manifestPath, err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("%s: format %q, want %q", manifestPath, m.Format, Format)
	}
	zf, err := os.Open(skeletonPath)
	if err != nil {
		return nil, err
	}
	defer zf.Close()
	zr, err := gzip.NewReader(zf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", skeletonPath, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", skeletonPath, err)
	}
	return newSkeleton(m, data)
}

func newSkeleton(m *Manifest, data []byte) (*Skeleton, error) {
	s := &Skeleton{Manifest: m, data: data}
	var n, end int64
	for _, r := range m.Kept {
		if r.Offset < end || r.Size < 0 || r.Offset+r.Size > m.Source.Size {
			return nil, fmt.Errorf("kept range %d+%d overlaps the one before or lies outside the %d-byte source", r.Offset, r.Size, m.Source.Size)
		}
		s.at = append(s.at, n)
		n += r.Size
		end = r.Offset + r.Size
	}
	if n != int64(len(data)) {
		return nil, fmt.Errorf("skeleton holds %d bytes, the manifest's kept ranges %d", len(data), n)
	}
	return s, nil
}

// Size is the source file's size.
func (s *Skeleton) Size() int64 { return s.Manifest.Source.Size }

// ReadAt serves the kept bytes and zeros for the dropped ones.
func (s *Skeleton) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= s.Size() {
		return 0, io.EOF
	}
	n := len(p)
	if rest := s.Size() - off; int64(n) > rest {
		n = int(rest)
	}
	clear(p[:n])
	kept := s.Manifest.Kept
	i := sort.Search(len(kept), func(i int) bool { return kept[i].Offset+kept[i].Size > off })
	for ; i < len(kept) && kept[i].Offset < off+int64(n); i++ {
		r := kept[i]
		lo, hi := max(off, r.Offset), min(off+int64(n), r.Offset+r.Size)
		copy(p[lo-off:hi-off], s.data[s.at[i]+lo-r.Offset:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Open parses the skeleton as a .pte (weights read as zeros).
func (s *Skeleton) Open() (*pte.File, error) { return pte.Parse(s, s.Size()) }
