package pte

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// want holds what the fixtures' READMEs and docs/pte-format.md state.
type want struct {
	name              string
	fileBytes         int64
	programSize       int64
	segmentBase       int64
	segments          int
	blobBytes         int64 // segment 1, the MLX delegate
	namedData         int
	methods           []string
	consts            map[string]any // int64 or []int64
	forwardOutDType   ScalarType
	chunk             int64
	kernels           []string
	nonConstBufferTop int64
}

var fixtureWants = []want{
	{
		name: fixtures.Llama3, fileBytes: 8296196, programSize: 5112, segmentBase: 5120, segments: 20, blobBytes: 8544, namedData: 23,
		methods: []string{"forward", "get_n_caches", "get_kv_heads", "get_head_dims", "get_windows", "get_prefill_chunk_size", "get_max_ctx_len"},
		consts: map[string]any{"get_n_caches": int64(2), "get_kv_heads": []int64{2, 2}, "get_head_dims": []int64{16, 16},
			"get_windows": []int64{0, 0}, "get_prefill_chunk_size": int64(32), "get_max_ctx_len": int64(128)},
		forwardOutDType: Float, chunk: 32, nonConstBufferTop: 16417280,
	},
	{
		name: fixtures.Gemma3, fileBytes: 16961156, programSize: 11168, segmentBase: 11264, segments: 60, blobBytes: 21360, namedData: 86,
		methods: []string{"forward", "get_n_caches", "get_kv_heads", "get_head_dims", "get_windows", "get_prefill_chunk_size", "get_max_ctx_len"},
		consts: map[string]any{"get_n_caches": int64(4), "get_kv_heads": []int64{2, 2, 2, 2}, "get_head_dims": []int64{16, 16, 16, 16},
			"get_windows": []int64{8, 8, 0, 8}, "get_prefill_chunk_size": int64(8), "get_max_ctx_len": int64(128)},
		forwardOutDType: Float, chunk: 8,
	},
	{
		name: fixtures.Qwen3, fileBytes: 9795844, programSize: 5576, segmentBase: 5632, segments: 20, blobBytes: 9184, namedData: 27,
		methods: []string{"forward", "get_n_caches", "get_kv_heads", "get_head_dims", "get_windows", "get_prefill_chunk_size", "get_max_ctx_len"},
		consts: map[string]any{"get_n_caches": int64(2), "get_kv_heads": []int64{2, 2}, "get_head_dims": []int64{16, 16},
			"get_windows": []int64{0, 0}, "get_prefill_chunk_size": int64(32), "get_max_ctx_len": int64(128)},
		forwardOutDType: Float, chunk: 32,
	},
	{
		name: fixtures.InGraph, fileBytes: 8298628, programSize: 4496, segmentBase: 4608, segments: 21, blobBytes: 11280, namedData: 24,
		methods: []string{"forward", "get_max_ctx_len", "get_prefill_chunk_size"},
		consts:  map[string]any{"get_prefill_chunk_size": int64(32), "get_max_ctx_len": int64(128)},
		kernels: []string{"aten::copy_", "aten::copy_"}, forwardOutDType: Float, chunk: 32,
	},
	{
		name: fixtures.BenchBF16, fileBytes: 65051780, programSize: 10680, segmentBase: 10752, segments: 62, blobBytes: 28000, namedData: 77,
		methods: []string{"forward", "get_n_caches", "get_kv_heads", "get_head_dims", "get_windows", "get_prefill_chunk_size", "get_max_ctx_len"},
		consts: map[string]any{"get_n_caches": int64(8), "get_kv_heads": []int64{2, 2, 2, 2, 2, 2, 2, 2}, "get_head_dims": []int64{64, 64, 64, 64, 64, 64, 64, 64},
			"get_windows": []int64{0, 0, 0, 0, 0, 0, 0, 0}, "get_prefill_chunk_size": int64(128), "get_max_ctx_len": int64(2048)},
		forwardOutDType: BFloat16, chunk: 128, nonConstBufferTop: 4196352,
	},
}

type reference struct {
	Model struct {
		VocabSize int64 `json:"vocab_size"`
	} `json:"model"`
	Export struct {
		ConstantMethods map[string]any `json:"constant_methods"`
	} `json:"export"`
}

func TestFixtures(t *testing.T) {
	for _, w := range fixtureWants {
		t.Run(w.name, func(t *testing.T) {
			f, err := Open(fixtures.PTE(w.name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h := f.Header
			if f.Size != w.fileBytes || h.ProgramSize != w.programSize || h.SegmentBaseOffset != w.segmentBase {
				t.Errorf("size %d program_size %d segment_base_offset %d, want %d %d %d", f.Size, h.ProgramSize, h.SegmentBaseOffset, w.fileBytes, w.programSize, w.segmentBase)
			}
			if h.SegmentBaseOffset+h.SegmentDataSize != f.Size || !h.Extended || h.Identifier != "ET12" || h.HeaderLength != 32 {
				t.Errorf("header %+v does not account for the %d-byte file", h, f.Size)
			}
			if got := f.BytesRead(); got != w.programSize {
				t.Errorf("Open read %d bytes, want exactly program_size %d", got, w.programSize)
			}
			if len(f.Segments) != w.segments {
				t.Errorf("%d segments, want %d", len(f.Segments), w.segments)
			}
			for i, s := range f.Segments {
				if (s.Offset-h.SegmentBaseOffset)%128 != 0 || s.Offset+s.Size > f.Size {
					t.Errorf("segment %d %+v misplaced", i, s)
				}
			}
			if f.ConstantSegment != 0 || f.ConstantOffsets[0] != 0 {
				t.Errorf("constant segment %d offsets %v", f.ConstantSegment, f.ConstantOffsets)
			}
			var names []string
			for _, m := range f.Methods {
				names = append(names, m.Name)
			}
			if strings.Join(names, ",") != strings.Join(w.methods, ",") {
				t.Errorf("methods %v, want %v", names, w.methods)
			}

			// forward: signature, its one MLX delegate in segment 1.
			fw, ok := f.Method("forward")
			if !ok || fw.IsConstant {
				t.Fatalf("forward missing or constant")
			}
			var ref reference
			fixtures.Reference(t, w.name, &ref)
			if len(fw.Inputs) != 2 || len(fw.Outputs) < 1 {
				t.Fatalf("forward: %s", fw.Describe())
			}
			in0, in1, out := fw.Inputs[0], fw.Inputs[1], fw.Outputs[0]
			if in0.DType != Long || !slices.Equal(in0.Sizes, []int64{1, w.chunk}) || in1.DType != Long || !slices.Equal(in1.Sizes, []int64{w.chunk}) ||
				out.DType != w.forwardOutDType || !slices.Equal(out.Sizes, []int64{1, w.chunk, ref.Model.VocabSize}) || out.Dynamism != DynamicBound {
				t.Errorf("forward is %s; want vocab %d, chunk %d, %s logits", fw.Describe(), ref.Model.VocabSize, w.chunk, w.forwardOutDType)
			}
			if len(fw.Delegates) != 1 || fw.DelegateCalls != 1 {
				t.Fatalf("forward delegates %+v, %d calls", fw.Delegates, fw.DelegateCalls)
			}
			dl := fw.Delegates[0]
			if dl.ID != "MLXBackend" || dl.Segment != 1 || dl.Inline || dl.Offset != f.Segments[1].Offset || dl.Size != w.blobBytes {
				t.Errorf("delegate %+v, want MLXBackend in segment 1 of %d bytes", dl, w.blobBytes)
			}
			if strings.Join(fw.Kernels, ",") != strings.Join(w.kernels, ",") {
				t.Errorf("kernels %v, want %v", fw.Kernels, w.kernels)
			}
			if w.nonConstBufferTop != 0 && (len(fw.NonConstBufferSizes) != 2 || fw.NonConstBufferSizes[1] != w.nonConstBufferTop) {
				t.Errorf("non_const_buffer_sizes %v, want [0 %d]", fw.NonConstBufferSizes, w.nonConstBufferTop)
			}
			blob, err := f.ReadSegment(dl.Segment)
			if err != nil || int64(len(blob)) != dl.Size || string(blob[4:8]) != "MLX0" {
				t.Errorf("ReadSegment(1): %d bytes, %v", len(blob), err)
			}

			// Constant methods: values from the README and reference.json.
			if got := f.ConstantNames(); len(got) != len(w.consts) {
				t.Errorf("constant methods %v, want %d", got, len(w.consts))
			}
			for name, wv := range w.consts {
				v, err := f.Constant(name)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				switch wv := wv.(type) {
				case int64:
					if got, err := v.Int(); err != nil || got != wv {
						t.Errorf("%s = %v (%v), want %d", name, got, err, wv)
					}
					if rv, ok := ref.Export.ConstantMethods[name]; ok && rv.(float64) != float64(wv) {
						t.Errorf("%s: reference.json says %v", name, rv)
					}
				case []int64:
					got, err := v.Ints()
					tt, terr := v.Tensor()
					if err != nil || !slices.Equal(got, wv) || terr != nil || tt.DType != Int {
						t.Errorf("%s = %v (%v), want int32 tensor %v", name, got, err, wv)
					}
				}
			}

			// Named data: every key "<4hex>/<FQN>", every segment a weight
			// segment (2+), and the tied embedding first.
			if len(f.NamedData) != w.namedData {
				t.Errorf("%d named_data entries, want %d", len(f.NamedData), w.namedData)
			}
			var seen = map[int]bool{}
			var total int64
			for _, nd := range f.NamedData {
				if nd.Segment < 2 || len(nd.Key) < 6 || nd.Key[4] != '/' || nd.Offset != f.Segments[nd.Segment].Offset || nd.Size != f.Segments[nd.Segment].Size {
					t.Errorf("named data %+v", nd)
				}
				if !seen[nd.Segment] {
					seen[nd.Segment] = true
					total += nd.Size
				}
			}
			if !strings.HasSuffix(f.NamedData[0].Key, "/model.model.embed_tokens.weight") {
				t.Errorf("first named data %q", f.NamedData[0].Key)
			}
			if f.WeightBytes() != total || total > f.Header.SegmentDataSize {
				t.Errorf("WeightBytes %d, distinct segments %d", f.WeightBytes(), total)
			}
			if err := f.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := f.Close(); err != nil { // twice is harmless
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

func TestKnownNumbers(t *testing.T) {
	// docs/pte-format.md §2 and §6.
	f, err := Open(fixtures.PTE(fixtures.BenchBF16))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.WeightBytes() != 65012868 {
		t.Errorf("bf16 WeightBytes %d, want 65012868", f.WeightBytes())
	}
	if f.Segments[3].Size != 1024 || f.Segments[60].Size != 128 || f.Segments[61].Size != 4 {
		t.Errorf("bf16 segments 3/60/61: %+v %+v %+v", f.Segments[3], f.Segments[60], f.Segments[61])
	}
	if f.ConstantOffsets[2] != 16 || f.ConstantOffsets[3] != 48 || f.ConstantOffsets[4] != 80 {
		t.Errorf("constant offsets %v", f.ConstantOffsets)
	}

	g, err := Open(fixtures.PTE(fixtures.Gemma3))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	seg0, err := g.ReadSegment(0)
	if err != nil || len(seg0) != 64 || binary.LittleEndian.Uint32(seg0) != 0x358637bd {
		t.Errorf("gemma3 segment 0: % x (%v)", seg0, err)
	}
	var embedScale bool
	for _, nd := range g.NamedData {
		if strings.HasSuffix(nd.Key, "embed_scale") && nd.Size == 4 {
			embedScale = true
		}
	}
	if !embedScale {
		t.Error("gemma3: no 4-byte embed_scale named entry")
	}

	l, err := Open(fixtures.PTE(fixtures.Llama3))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.NamedData[0].Segment != 2 || l.NamedData[0].Size != 128256*16*4 {
		t.Errorf("llama3 embedding %+v", l.NamedData[0])
	}
	norms := 0
	for _, nd := range l.NamedData {
		if strings.Contains(nd.Key, "norm") && nd.Segment == 3 {
			norms++
		}
	}
	if norms != 5 {
		t.Errorf("llama3: %d norm weights share segment 3, want 5", norms)
	}
}

func TestConstantTypeErrors(t *testing.T) {
	f, err := Open(fixtures.PTE(fixtures.Gemma3))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, _ := f.Constant("get_n_caches")
	if _, err := n.Ints(); err == nil || !strings.Contains(err.Error(), `"get_n_caches" returns Int`) {
		t.Errorf("Ints on an Int: %v", err)
	}
	if _, err := n.Text(); err == nil {
		t.Error("Text on an Int succeeded")
	}
	kv, _ := f.Constant("get_kv_heads")
	if _, err := kv.Int(); err == nil || !strings.Contains(err.Error(), "returns a Tensor of Int, sizes [4], not an Int") {
		t.Errorf("Int on a tensor: %v", err)
	}
	if _, err := kv.Float(); err == nil {
		t.Error("Float on a tensor succeeded")
	}
	if _, err := f.Constant("forward"); err == nil || !strings.Contains(err.Error(), "not a constant method") || !strings.Contains(err.Error(), "model.pte") {
		t.Errorf("Constant(forward): %v", err)
	}
	if _, err := f.Constant("get_eos_ids"); err == nil || !strings.Contains(err.Error(), "no method") {
		t.Errorf("Constant(missing): %v", err)
	}
	if _, err := f.ReadSegment(60); err == nil {
		t.Error("ReadSegment past the table succeeded")
	}
	if kv.String() != "[2 2 2 2]" || n.String() != "4" {
		t.Errorf("display %q %q", kv.String(), n.String())
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Open(dir): %v", err)
	}
	if _, err := Open(dir + "/missing.pte"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing): %v", err)
	}
	p := dir + "/config.json"
	os.WriteFile(p, []byte(`{"model_type": "llama"}`), 0o644)
	_, err := Open(p)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "ET12") {
		t.Errorf("Open(json): %v", err)
	}
}

// sparse is a file of size bytes whose first len(data) bytes are data and
// the rest zeros: it stands for a full .pte when only its start matters.
type sparse struct {
	data []byte
	size int64
}

func (s *sparse) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= s.size {
		return 0, io.EOF
	}
	n := len(p)
	if int64(n) > s.size-off {
		n = int(s.size - off)
	}
	c := 0
	if off < int64(len(s.data)) {
		c = copy(p[:n], s.data[off:])
	}
	clear(p[c:n])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// head reads the first n bytes of a fixture.
func head(t testing.TB, name string, n int64) []byte {
	t.Helper()
	fh, err := os.Open(fixtures.PTE(name))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(fh, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTruncated(t *testing.T) {
	full, err := os.ReadFile(fixtures.PTE(fixtures.Llama3))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 4, 7, 8, 12, 39, 40, 41, 1000, 5111, 5112, 5120, 5200, 13824, len(full) / 2, len(full) - 1} {
		_, err := Parse(bytes.NewReader(full[:n]), int64(n))
		if err == nil {
			t.Errorf("truncated to %d bytes: no error", n)
			continue
		}
		if n >= 8 && !errors.Is(err, ErrFormat) {
			t.Errorf("truncated to %d bytes: %v is not a format error", n, err)
		}
		if n >= 5120 && !strings.Contains(err.Error(), "truncated") {
			t.Errorf("truncated to %d bytes: %v does not say truncated", n, err)
		}
	}
	if _, err := Parse(bytes.NewReader(full), int64(len(full))); err != nil {
		t.Fatalf("whole file: %v", err)
	}
}

// patchable is llama3's program plus a locator for positions inside it.
type patchable struct {
	prog []byte
	d    *dec
	root tbl
}

func newPatchable(t *testing.T) *patchable {
	prog := head(t, fixtures.Llama3, 5120+56+8544+128)
	d := &dec{b: prog[:5112], budget: 1 << 30}
	root, ok := d.root("program")
	if !ok {
		t.Fatal(d.err)
	}
	return &patchable{prog: prog, d: d, root: root}
}

func (p *patchable) parse() error {
	_, err := Parse(&sparse{data: p.prog, size: 8296196}, 8296196)
	return err
}

// segField is the position of segments[i]'s field id (0 offset, 1 size).
func (p *patchable) segField(t *testing.T, i uint64, id int) uint64 {
	v := p.d.fVec(p.root, progSegments, 4, "segments")
	st, ok := p.d.tableIn(v, i, "seg")
	pos := p.d.field(st, id, 8)
	if !ok || pos == 0 {
		t.Fatal("segment field not found")
	}
	return pos
}

func TestCorrupt(t *testing.T) {
	if err := newPatchable(t).parse(); err != nil {
		t.Fatalf("unpatched: %v", err)
	}
	cases := []struct {
		name  string
		patch func(t *testing.T, p *patchable)
		want  string
	}{
		{"wrong identifier", func(t *testing.T, p *patchable) { copy(p.prog[4:], "ET99") }, `"ET99"`},
		{"program size past end", func(t *testing.T, p *patchable) { binary.LittleEndian.PutUint64(p.prog[16:], 1<<40) }, "program_size"},
		{"segment base inside program", func(t *testing.T, p *patchable) { binary.LittleEndian.PutUint64(p.prog[24:], 100) }, "inside the program"},
		{"segment data past end", func(t *testing.T, p *patchable) { binary.LittleEndian.PutUint64(p.prog[32:], 1<<50) }, "truncated"},
		{"root offset", func(t *testing.T, p *patchable) { binary.LittleEndian.PutUint32(p.prog[0:], 1<<30) }, "root table offset"},
		{"root vtable", func(t *testing.T, p *patchable) { binary.LittleEndian.PutUint32(p.prog[64:], 0x7fffff00) }, "vtable"},
		{"overlapping segments", func(t *testing.T, p *patchable) {
			binary.LittleEndian.PutUint64(p.prog[p.segField(t, 2, 0):], 128)
		}, "overlap"},
		{"segment past end", func(t *testing.T, p *patchable) {
			binary.LittleEndian.PutUint64(p.prog[p.segField(t, 19, 1):], 1<<40)
		}, "runs past the end"},
		{"absurd plan count", func(t *testing.T, p *patchable) {
			pos, _ := p.d.ref(p.root, progPlans)
			binary.LittleEndian.PutUint32(p.prog[pos:], 0x7fffffff)
		}, "outside the 5112-byte program"},
		{"named data segment", func(t *testing.T, p *patchable) {
			v := p.d.fVec(p.root, progNamedData, 4, "nd")
			nt, _ := p.d.tableIn(v, 0, "nd")
			binary.LittleEndian.PutUint32(p.prog[p.d.field(nt, 1, 4):], 99)
		}, "segment 99 does not exist"},
		{"constant offset", func(t *testing.T, p *patchable) {
			cs, _ := p.d.fTable(p.root, progConstSeg, "cs")
			v := p.d.fVec(cs, 1, 8, "offs")
			binary.LittleEndian.PutUint64(p.prog[v.start+8*2:], 1<<20)
		}, "outside the constant segment"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newPatchable(t)
			c.patch(t, p)
			err := p.parse()
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want a format error mentioning %q", err, c.want)
			}
		})
	}

	// A constant whose tensor no longer fits its buffer fails on Constant,
	// not on Parse, naming the method.
	p := newPatchable(t)
	cs, _ := p.d.fTable(p.root, progConstSeg, "cs")
	v := p.d.fVec(cs, 1, 8, "offs")
	binary.LittleEndian.PutUint64(p.prog[v.start+8*4:], 52) // get_windows' buffer at 52 of 56 bytes
	f, err := Parse(&sparse{data: p.prog, size: 8296196}, 8296196)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Constant("get_windows"); err == nil || !strings.Contains(err.Error(), `"get_windows"`) || !strings.Contains(err.Error(), "needs 8 bytes") {
		t.Errorf("Constant(get_windows) with a short buffer: %v", err)
	}
}

func TestNoExtendedHeader(t *testing.T) {
	// Without "eh00" the program is the whole file; segments then cannot be
	// located, which must be an error rather than a guess.
	b := head(t, fixtures.Llama3, 5112)
	copy(b[8:], "xx00")
	_, err := Parse(bytes.NewReader(b), int64(len(b)))
	if err == nil || !strings.Contains(err.Error(), "no extended header") {
		t.Errorf("got %v", err)
	}
}

func TestScalarType(t *testing.T) {
	for _, c := range []struct {
		t    ScalarType
		name string
		size int
	}{{Float, "Float", 4}, {BFloat16, "BFloat16", 2}, {Long, "Long", 8}, {Int, "Int", 4}, {Half, "Half", 2}, {Bool, "Bool", 1}, {ScalarType(9), "ScalarType(9)", 0}} {
		if c.t.String() != c.name || c.t.Size() != c.size {
			t.Errorf("%d: %s %d, want %s %d", int(c.t), c.t, c.t.Size(), c.name, c.size)
		}
	}
}

func TestEveryTruncation(t *testing.T) {
	// Cut llama3 after every byte of its header and program (the file's
	// declared size stays honest: what is there is all there is).
	b := head(t, fixtures.Llama3, 5120+56)
	for n := 0; n <= len(b); n++ {
		f, err := Parse(bytes.NewReader(b[:n]), int64(n))
		if err == nil {
			t.Fatalf("cut at %d: parsed (%d methods)", n, len(f.Methods))
		}
		if n >= minHeader && !errors.Is(err, ErrFormat) {
			t.Fatalf("cut at %d: %v is not a format error", n, err)
		}
	}
	// The same cuts with a header that agrees (program_size = the cut, no
	// segment data), so the flatbuffer reader meets a partial program.
	for n := headerBytes; n <= 5112; n++ {
		c := append([]byte(nil), b[:n]...)
		binary.LittleEndian.PutUint64(c[16:], uint64(n))
		binary.LittleEndian.PutUint64(c[24:], 0)
		binary.LittleEndian.PutUint64(c[32:], 0)
		if _, err := Parse(bytes.NewReader(c), int64(n)); err == nil || !errors.Is(err, ErrFormat) {
			t.Fatalf("program cut at %d: %v", n, err)
		}
	}
}

func TestMutations(t *testing.T) {
	// Deterministic random corruption of each fixture's program: never a
	// panic, every failure a FormatError, anything accepted in bounds.
	r := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.InGraph} {
		h := head(t, name, 48)
		base := int64(binary.LittleEndian.Uint64(h[24:]))
		size := base + int64(binary.LittleEndian.Uint64(h[32:]))
		orig := head(t, name, base)
		accepted := 0
		for it := 0; it < 3000; it++ {
			b := append([]byte(nil), orig...)
			for range 1 + r.IntN(4) {
				i := 40 + r.IntN(len(b)-44)
				switch r.IntN(3) {
				case 0:
					b[i] = byte(r.Uint32())
				case 1:
					b[i] ^= 1 << r.IntN(8)
				case 2:
					binary.LittleEndian.PutUint32(b[i:], r.Uint32())
				}
			}
			f, err := Parse(&sparse{data: b, size: size}, size)
			if err != nil {
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("%s iteration %d: %v", name, it, err)
				}
				continue
			}
			accepted++
			for _, m := range f.Methods {
				for _, d := range m.Delegates {
					if d.Offset < 0 || d.Offset+d.Size > size {
						t.Fatalf("delegate %+v outside the file", d)
					}
				}
				if m.IsConstant {
					f.Constant(m.Name)
				}
			}
		}
		if accepted == 0 {
			t.Errorf("%s: no mutation was accepted; the test would not notice a reader that rejects everything", name)
		}
	}
}
