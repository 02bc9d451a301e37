package quality

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// The saved-logits file (--save-logits, read back by --kl-base), version 1.
// All numbers little-endian.
//
//	"ETCHATLG"  8 bytes
//	version     uint32 (1)
//	header size uint32, then that many bytes of JSON (Header)
//	one record per scored token, in scoring order (Header.Rows of them):
//	  full rows (top_k 0): target log-prob float32, argmax uint32,
//	    min float32, step float32, then vocab uint16 q: log-prob = min + q·step
//	    (llama-perplexity's uint16 form; log-probs below -MinLogProb are clamped)
//	  top-k rows: target log-prob float32, then top_k × (id uint32, log-prob float32),
//	    most likely first
//	"ETCHATND", rows uint32: the end, so a cut file is refused rather than misread
//
// A reader streams it a record at a time: a 128k-vocabulary base is about
// 256 KB a token in full rows, 8·k bytes in top-k ones.
const (
	fileMagic   = "ETCHATLG"
	endMagic    = "ETCHATND"
	FileVersion = 1
	// MinLogProb bounds the log-probabilities a full row stores; anything
	// less likely (p < e^-40) is stored as e^-40.
	MinLogProb = -40.0
	maxHeader  = 64 << 20
)

// Header describes a saved-logits file: what made it and over which tokens.
type Header struct {
	Version         int    `json:"version"`
	Model           string `json:"model"`
	ModelSHA256     string `json:"model_sha256"`
	Engine          string `json:"engine"`
	Mode            string `json:"mode,omitempty"` // the CPU engine's numerics mode, once it has them
	Tokenizer       string `json:"tokenizer,omitempty"`
	TokenizerSHA256 string `json:"tokenizer_sha256,omitempty"`
	Vocab           int    `json:"vocab"`
	Ctx             int    `json:"ctx"`
	First           int    `json:"first"`
	Prefix          []int  `json:"prefix,omitempty"`
	TopK            int    `json:"top_k"` // 0: full rows
	Rows            int    `json:"rows"`
	Tokens          []int  `json:"tokens"` // the windows' tokens, before the prefix is written over them
}

// BaseFormatError: the file is not a saved-logits file this build reads.
type BaseFormatError struct {
	Path string
	Err  error
}

func (e *BaseFormatError) Error() string {
	return fmt.Sprintf("%s is not a saved-logits file etchat reads: %v", e.Path, e.Err)
}
func (e *BaseFormatError) Unwrap() error { return e.Err }

// BaseMismatchError: the base was made over other tokens than this run
// scores, so their distributions cannot be compared.
type BaseMismatchError struct {
	What       string // "vocabulary", "window", "tokenizer", "tokens"
	Base, Here string
}

func (e *BaseMismatchError) Error() string {
	switch e.What {
	case "tokenizer":
		return fmt.Sprintf("the base was made with another tokenizer (%s; this model's: %s) and the text's ids differ", e.Base, e.Here)
	case "tokens":
		return fmt.Sprintf("the base scored other tokens (%s; here: %s)", e.Base, e.Here)
	}
	return fmt.Sprintf("the base's %s is %s, this run's %s", e.What, e.Base, e.Here)
}

// logitsWriter writes a saved-logits file.
type logitsWriter struct {
	w    *bufio.Writer
	topk int
	rows int
	buf  []byte
	idx  []int
}

func newLogitsWriter(w io.Writer, h Header) (*logitsWriter, error) {
	h.Version = FileVersion
	js, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(fileMagic)
	var n [8]byte
	binary.LittleEndian.PutUint32(n[:4], FileVersion)
	binary.LittleEndian.PutUint32(n[4:], uint32(len(js)))
	bw.Write(n[:])
	if _, err := bw.Write(js); err != nil {
		return nil, err
	}
	return &logitsWriter{w: bw, topk: h.TopK}, nil
}

func (lw *logitsWriter) put32(v uint32) { lw.buf = binary.LittleEndian.AppendUint32(lw.buf, v) }
func (lw *logitsWriter) putF(v float64) { lw.put32(math.Float32bits(float32(v))) }

// row writes one scored token's record from its log-probabilities.
func (lw *logitsWriter) row(lp []float64, argmax, target int) error {
	lw.buf = lw.buf[:0]
	lw.putF(lp[target])
	if lw.topk > 0 {
		lw.idx = topK(lw.idx, lp, lw.topk)
		for _, id := range lw.idx {
			lw.put32(uint32(id))
			lw.putF(lp[id])
		}
	} else {
		lw.put32(uint32(argmax))
		lo := 0.0
		for _, v := range lp {
			lo = min(lo, v)
		}
		lo = max(lo, MinLogProb)
		step := -lo / 65535
		if step == 0 {
			step = 1
		}
		lw.putF(lo)
		lw.putF(step)
		inv := 1 / step
		for _, v := range lp {
			q := (max(v, lo)-lo)*inv + 0.5 // round to nearest: v ≥ lo
			lw.buf = binary.LittleEndian.AppendUint16(lw.buf, uint16(min(q, 65535)))
		}
	}
	lw.rows++
	_, err := lw.w.Write(lw.buf)
	return err
}

// close writes the end record and flushes.
func (lw *logitsWriter) close() error {
	lw.w.WriteString(endMagic)
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(lw.rows))
	lw.w.Write(n[:])
	return lw.w.Flush()
}

// topK is the ids of the k largest values of lp, largest first (lower id
// first on a tie), in dst's storage.
func topK(dst []int, lp []float64, k int) []int {
	k = min(k, len(lp))
	dst = dst[:0]
	less := func(a, b int) bool { return lp[a] < lp[b] || (lp[a] == lp[b] && a > b) }
	// A min-heap of the best k so far: its root is the one to drop.
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(dst) {
				return
			}
			if c+1 < len(dst) && less(dst[c+1], dst[c]) {
				c++
			}
			if !less(dst[c], dst[i]) {
				return
			}
			dst[i], dst[c] = dst[c], dst[i]
			i = c
		}
	}
	for id := range lp {
		switch {
		case len(dst) < k:
			dst = append(dst, id)
			if len(dst) == k {
				for i := k/2 - 1; i >= 0; i-- {
					down(i)
				}
			}
		case less(dst[0], id):
			dst[0] = id
			down(0)
		}
	}
	slices.SortFunc(dst, func(a, b int) int {
		switch {
		case less(b, a):
			return -1
		case less(a, b):
			return 1
		}
		return 0
	})
	return dst
}

// baseRow is one record read back.
type baseRow struct {
	target float64   // the scored token's log-prob
	argmax int       // the most likely id
	lp     []float64 // full rows: every id's log-prob, renormalized
	ids    []int     // top-k rows: the ids and their log-probs
	topLP  []float64
}

// logitsReader streams a saved-logits file.
type logitsReader struct {
	path string
	r    *bufio.Reader
	h    Header
	read int
	buf  []byte
}

func newLogitsReader(r io.Reader, path string) (*logitsReader, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	bad := func(err error) error { return &BaseFormatError{Path: path, Err: err} }
	var pre [16]byte
	if _, err := io.ReadFull(br, pre[:]); err != nil {
		return nil, bad(fmt.Errorf("no header: %w", err))
	}
	if string(pre[:8]) != fileMagic {
		return nil, bad(errors.New("it does not start with " + fileMagic))
	}
	if v := binary.LittleEndian.Uint32(pre[8:]); v != FileVersion {
		return nil, bad(fmt.Errorf("version %d; this build reads version %d", v, FileVersion))
	}
	n := binary.LittleEndian.Uint32(pre[12:])
	if n > maxHeader {
		return nil, bad(fmt.Errorf("a header of %d bytes", n))
	}
	js := make([]byte, n)
	if _, err := io.ReadFull(br, js); err != nil {
		return nil, bad(fmt.Errorf("header: %w", err))
	}
	lr := &logitsReader{path: path, r: br}
	if err := json.Unmarshal(js, &lr.h); err != nil {
		return nil, bad(fmt.Errorf("header: %w", err))
	}
	h := lr.h
	if h.Vocab < 1 || h.TopK < 0 || h.TopK > h.Vocab || h.Rows < 0 || h.Ctx < 4 || h.First < 1 || h.First >= h.Ctx {
		return nil, bad(fmt.Errorf("header: vocab %d, top_k %d, rows %d, ctx %d, first %d", h.Vocab, h.TopK, h.Rows, h.Ctx, h.First))
	}
	return lr, nil
}

// next reads the next record into row.
func (lr *logitsReader) next(row *baseRow) error {
	bad := func(err error) error { return &BaseFormatError{Path: lr.path, Err: err} }
	if lr.read >= lr.h.Rows {
		return bad(fmt.Errorf("more tokens scored than its %d records", lr.h.Rows))
	}
	size := 4 + 8*lr.h.TopK
	if lr.h.TopK == 0 {
		size = 16 + 2*lr.h.Vocab
	}
	if cap(lr.buf) < size {
		lr.buf = make([]byte, size)
	}
	b := lr.buf[:size]
	if _, err := io.ReadFull(lr.r, b); err != nil {
		return bad(fmt.Errorf("record %d of %d: %w", lr.read+1, lr.h.Rows, err))
	}
	lr.read++
	f32 := func(i int) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))) }
	row.target = f32(0)
	if lr.h.TopK > 0 {
		row.ids, row.topLP = row.ids[:0], row.topLP[:0]
		for i := range lr.h.TopK {
			id := int(binary.LittleEndian.Uint32(b[4+8*i:]))
			if id >= lr.h.Vocab {
				return bad(fmt.Errorf("record %d: id %d outside the vocabulary", lr.read, id))
			}
			row.ids, row.topLP = append(row.ids, id), append(row.topLP, f32(8+8*i))
		}
		row.argmax = row.ids[0]
		return nil
	}
	row.argmax = int(binary.LittleEndian.Uint32(b[4:]))
	lo, step := f32(8), f32(12)
	if row.argmax >= lr.h.Vocab || math.IsNaN(lo) || math.IsNaN(step) {
		return bad(fmt.Errorf("record %d: argmax %d, min %v, step %v", lr.read, row.argmax, lo, step))
	}
	if cap(row.lp) < lr.h.Vocab {
		row.lp = make([]float64, lr.h.Vocab)
	}
	row.lp = row.lp[:lr.h.Vocab]
	var sum float64
	for i := range row.lp {
		v := lo + float64(binary.LittleEndian.Uint16(b[16+2*i:]))*step
		row.lp[i] = v
		sum += math.Exp(v)
	}
	// Quantized log-probs no longer sum to one exactly: renormalize, so a
	// model against its own base scores a KLD of (almost) nothing.
	ls := math.Log(sum)
	for i := range row.lp {
		row.lp[i] -= ls
	}
	return nil
}

// end checks that every record was read and the file ends as written.
func (lr *logitsReader) end() error {
	bad := func(err error) error { return &BaseFormatError{Path: lr.path, Err: err} }
	if lr.read != lr.h.Rows {
		return bad(fmt.Errorf("%d of its %d records used", lr.read, lr.h.Rows))
	}
	var t [12]byte
	if _, err := io.ReadFull(lr.r, t[:]); err != nil || string(t[:8]) != endMagic || int(binary.LittleEndian.Uint32(t[8:])) != lr.h.Rows {
		return bad(errors.New("it does not end as a complete file does (cut short?)"))
	}
	return nil
}
