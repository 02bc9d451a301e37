package pte

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// Limits that keep a hostile file from making the reader allocate or work
// without bound.
const (
	// MaxProgramSize is the largest Program flatbuffer read into memory.
	MaxProgramSize = 256 << 20
	// headerBytes is the root offset, file identifier and extended header.
	headerBytes = 40
	minHeader   = 8
)

// ErrFormat is wrapped by every error about a file's content (as opposed
// to an I/O error), so callers can tell "not a valid .pte" apart.
var ErrFormat = errors.New("invalid .pte")

// FormatError says what is wrong with a file.
type FormatError struct {
	Path   string // "" when parsed from a reader
	Reason string
}

func (e *FormatError) Error() string {
	if e.Path == "" {
		return "invalid .pte: " + e.Reason
	}
	return e.Path + ": invalid .pte: " + e.Reason
}

// Unwrap makes errors.Is(err, ErrFormat) true.
func (e *FormatError) Unwrap() error { return ErrFormat }

func formatf(format string, a ...any) error {
	return &FormatError{Reason: fmt.Sprintf(format, a...)}
}

// Header is the file header: the flatbuffer's root offset and identifier
// and the "eh00" extended header.
type Header struct {
	RootOffset        uint32
	Identifier        string // "ET12"
	Extended          bool   // an "eh00" header was present
	HeaderLength      uint32 // the extended header's own length (32)
	ProgramSize       int64  // bytes of the Program flatbuffer from file offset 0
	SegmentBaseOffset int64  // file offset where segment data starts (0: no segments)
	SegmentDataSize   int64  // bytes of segment data (0 when not recorded)
}

// Segment is one data segment, with its offset made absolute.
type Segment struct {
	Offset int64 // absolute file offset
	Size   int64
}

// File is an opened .pte: the header, segment table and Program contents.
// Segment and constant data are read on demand through the ReaderAt.
type File struct {
	Path   string
	Size   int64
	Header Header

	Version   uint32 // Program.version
	Segments  []Segment
	Methods   []Method
	NamedData []NamedData

	// ConstantSegment is the index of the segment holding constant tensor
	// data (-1 if none); ConstantOffsets are the buffers' offsets in it.
	ConstantSegment int
	ConstantOffsets []uint64
	// ConstantBuffers are the deprecated inline constant buffers, as
	// absolute file ranges (empty in current exports).
	ConstantBuffers []Segment
	// InlineDelegateData are Program.backend_delegate_data as absolute file
	// ranges (empty when delegates live in segments).
	InlineDelegateData []Segment

	r      *countingReader
	closer io.Closer
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// Open opens the .pte at path. It reads the header and the Program
// flatbuffer only; segments are read when asked for. Errors name the file.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &FormatError{Path: path, Reason: "not a regular file"}
	}
	pf, err := Parse(f, st.Size())
	if err != nil {
		f.Close()
		return nil, withPath(err, path)
	}
	pf.Path = path
	pf.closer = f
	return pf, nil
}

func withPath(err error, path string) error {
	var fe *FormatError
	if errors.As(err, &fe) {
		e := *fe
		e.Path = path
		return &e
	}
	return fmt.Errorf("%s: %w", path, err)
}

// Close closes the underlying file when Open made it. Calling it twice is
// harmless.
func (f *File) Close() error {
	if f == nil || f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c.Close()
}

// BytesRead is how many bytes have been read from the file so far.
func (f *File) BytesRead() int64 { return f.r.n.Load() }

// ReaderAt reads the file, counted in BytesRead.
func (f *File) ReaderAt() io.ReaderAt { return f.r }

// readAt reads exactly n bytes at off, which the caller has bounded.
func (f *File) readAt(off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off > f.Size || n > f.Size-off {
		return nil, f.errf("range at %d (+%d bytes) is outside the %d-byte file", off, n, f.Size)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(io.NewSectionReader(f.r, off, n), b); err != nil {
		return nil, f.wrap(fmt.Errorf("reading %d bytes at %d: %w", n, off, err))
	}
	return b, nil
}

// ReadRange reads size bytes at absolute offset off; the range must lie in
// the file.
func (f *File) ReadRange(off, size int64) ([]byte, error) { return f.readAt(off, size) }

// ReadSegment reads segment i whole.
func (f *File) ReadSegment(i int) ([]byte, error) {
	if i < 0 || i >= len(f.Segments) {
		return nil, f.errf("segment %d does not exist (%d segments)", i, len(f.Segments))
	}
	s := f.Segments[i]
	return f.readAt(s.Offset, s.Size)
}

// SegmentReader returns a reader over segment i.
func (f *File) SegmentReader(i int) (*io.SectionReader, error) {
	if i < 0 || i >= len(f.Segments) {
		return nil, f.errf("segment %d does not exist (%d segments)", i, len(f.Segments))
	}
	s := f.Segments[i]
	return io.NewSectionReader(f.r, s.Offset, s.Size), nil
}

func (f *File) errf(format string, a ...any) error {
	return &FormatError{Path: f.Path, Reason: fmt.Sprintf(format, a...)}
}

func (f *File) wrap(err error) error {
	if f.Path == "" {
		return err
	}
	return withPath(err, f.Path)
}

// Parse reads a .pte from r, size bytes long.
func Parse(r io.ReaderAt, size int64) (*File, error) {
	cr := &countingReader{r: r}
	f := &File{Size: size, r: cr, ConstantSegment: -1}
	if size < minHeader {
		return nil, formatf("file is %d bytes, too short for a .pte header", size)
	}
	head := make([]byte, min(size, headerBytes))
	if _, err := io.ReadFull(io.NewSectionReader(cr, 0, int64(len(head))), head); err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	h, err := parseHeader(head, size)
	if err != nil {
		return nil, err
	}
	f.Header = h

	prog := make([]byte, h.ProgramSize)
	copy(prog, head)
	if rest := h.ProgramSize - int64(len(head)); rest > 0 {
		if _, err := io.ReadFull(io.NewSectionReader(cr, int64(len(head)), rest), prog[len(head):]); err != nil {
			return nil, fmt.Errorf("reading the %d-byte program: %w", h.ProgramSize, err)
		}
	}
	if err := f.parseProgram(prog); err != nil {
		return nil, err
	}
	return f, nil
}

func parseHeader(head []byte, size int64) (Header, error) {
	var h Header
	h.RootOffset = binary.LittleEndian.Uint32(head)
	h.Identifier = string(head[4:8])
	if h.Identifier != "ET12" {
		if bytes.HasPrefix(head, []byte("PK")) || bytes.HasPrefix(head, []byte("\x89PNG")) || bytes.HasPrefix(head, []byte("{")) {
			return h, formatf("not an ExecuTorch program (file identifier %q, want \"ET12\")", printable(head[:8]))
		}
		return h, formatf("wrong file identifier %q at offset 4, want \"ET12\" (not an ExecuTorch program, or an unsupported version)", printable(head[4:8]))
	}
	if len(head) >= headerBytes && string(head[8:12]) == "eh00" {
		h.Extended = true
		h.HeaderLength = binary.LittleEndian.Uint32(head[12:])
		if h.HeaderLength < 24 {
			return h, formatf("extended header length %d is too short (want at least 24)", h.HeaderLength)
		}
		ps := binary.LittleEndian.Uint64(head[16:])
		sb := binary.LittleEndian.Uint64(head[24:])
		var sd uint64
		if h.HeaderLength >= 32 {
			sd = binary.LittleEndian.Uint64(head[32:])
		}
		switch {
		case ps < headerBytes:
			return h, formatf("program_size %d is smaller than the %d-byte header", ps, headerBytes)
		case ps > uint64(size):
			return h, formatf("truncated: program_size %d is larger than the %d-byte file", ps, size)
		case ps > MaxProgramSize:
			return h, formatf("program_size %d is above the %d-byte limit", ps, MaxProgramSize)
		case sb > uint64(size):
			return h, formatf("truncated: segment_base_offset %d is past the end of the %d-byte file", sb, size)
		case sb != 0 && sb < ps:
			return h, formatf("segment_base_offset %d lies inside the program (program_size %d)", sb, ps)
		case sd > uint64(size)-sb:
			return h, formatf("truncated: segment data %d..%d runs past the end of the %d-byte file", sb, sb+min(sd, 1<<62), size)
		}
		h.ProgramSize, h.SegmentBaseOffset, h.SegmentDataSize = int64(ps), int64(sb), int64(sd)
	} else {
		// No extended header: the program is the whole file.
		if size > MaxProgramSize {
			return h, formatf("no extended header, and the %d-byte file is above the %d-byte program limit", size, MaxProgramSize)
		}
		h.ProgramSize = size
	}
	if uint64(h.RootOffset)+4 > uint64(h.ProgramSize) {
		return h, formatf("root table offset %d is outside the %d-byte program", h.RootOffset, h.ProgramSize)
	}
	return h, nil
}

func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}
