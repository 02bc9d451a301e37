package mlx

// Header section 3: session.

import (
	"time"
	"unsafe"
)

// sessionHandle is an etchat_session*; zero means closed.
type sessionHandle uintptr

type sessionFuncs struct {
	sessionOpen      func(p programHandle, cfg *CConfig, layers *CLayer, n int32, out *sessionHandle) int32
	sessionForward   func(s sessionHandle, ids, positions *int64, n int32, logits *float32, capacity int64, allRows int32, written *int64) int32
	sessionRewind    func(s sessionHandle, newLen int32) int32
	sessionClear     func(s sessionHandle) int32
	sessionLength    func(s sessionHandle, out *int32) int32
	sessionCapacity  func(s sessionHandle, out *int32) int32
	sessionCanExtend func(s sessionHandle, n int32, out *int32) int32
	sessionClose     func(s sessionHandle) int32
	// nil when the library lacks etchat_session_forward_view (optional):
	// forward then copies every step's logits into the caller's buffer.
	sessionForwardView func(s sessionHandle, ids, positions *int64, n int32, logits *float32, capacity int64, allRows int32, out **float32, written *int64) int32
}

func (f *sessionFuncs) bind(l *library) error {
	for _, s := range []struct {
		fptr any
		name string
	}{
		{&f.sessionOpen, "etchat_session_open"},
		{&f.sessionForward, "etchat_session_forward"},
		{&f.sessionRewind, "etchat_session_rewind"},
		{&f.sessionClear, "etchat_session_clear"},
		{&f.sessionLength, "etchat_session_length"},
		{&f.sessionCapacity, "etchat_session_capacity"},
		{&f.sessionCanExtend, "etchat_session_can_extend"},
		{&f.sessionClose, "etchat_session_close"},
	} {
		if err := l.symbol(s.fptr, s.name); err != nil {
			return err
		}
	}
	if l.has("etchat_session_forward_view") {
		return l.symbol(&f.sessionForwardView, "etchat_session_forward_view")
	}
	return nil
}

// openSession opens a session on program p. cfg nil (and no layers) opens
// an in-graph session.
func (l *library) openSession(p programHandle, cfg *CConfig, layers []CLayer) (sessionHandle, error) {
	if p == 0 {
		return 0, errZeroHandle("session_open", "program")
	}
	var lp *CLayer
	if len(layers) > 0 {
		lp = &layers[0]
	}
	var h sessionHandle
	err := l.call("session_open", func() int32 {
		return l.sessionOpen(p, cfg, lp, int32(len(layers)), &h)
	})
	if err != nil {
		return 0, err
	}
	return h, nil
}

// forward runs ids at positions and returns the logits: len(out) floats
// of room in out, which the library fills when it copies (or converts)
// them. Where the library has etchat_session_forward_view and the logits
// are float32 the result is not out but the library's own output tensor,
// read in place: read-only, valid until the session's next forward or
// close. With sample (timing on) it also records the call's duration and
// the library's parts of it.
func (l *library) forward(h sessionHandle, ids, positions []int64, out []float32, allRows bool, sample *StepSample) ([]float32, error) {
	if h == 0 {
		return nil, errZeroHandle("forward", "session")
	}
	if len(ids) == 0 || len(ids) != len(positions) || len(out) == 0 {
		return nil, &Error{Op: "forward", Status: StatusInvalidArgument,
			Msg: "forward: needs as many positions as ids (at least one) and an output buffer"}
	}
	all := int32(0)
	if allRows {
		all = 1
	}
	var written int64
	view := &out[0]
	step := func() int32 {
		if l.sessionForwardView != nil {
			return l.sessionForwardView(h, &ids[0], &positions[0], int32(len(ids)), &out[0], int64(len(out)), all, &view, &written)
		}
		return l.sessionForward(h, &ids[0], &positions[0], int32(len(ids)), &out[0], int64(len(out)), all, &written)
	}
	var err error
	if sample == nil {
		err = l.call("forward", step)
	} else {
		// The library's timing is thread_local on the calling thread: read
		// it under the same pin as the call.
		err = l.call("forward", func() int32 {
			t := time.Now()
			st := step()
			sample.Call = time.Since(t)
			if st == 0 {
				l.lastTiming(&sample.C)
			}
			return st
		})
	}
	if err != nil {
		return nil, err
	}
	if written < 0 || written > int64(len(out)) || view == nil {
		return nil, &Error{Op: "forward", Status: StatusInternal, Msg: "forward: library reported an impossible logits count"}
	}
	if view == &out[0] {
		return out[:written], nil
	}
	// The library's memory, not Go's: the garbage collector neither moves
	// nor frees it, and the session keeps it alive until its next forward.
	return unsafe.Slice(view, written), nil
}

func (l *library) rewind(h sessionHandle, newLen int32) error {
	if h == 0 {
		return errZeroHandle("rewind", "session")
	}
	return l.call("rewind", func() int32 { return l.sessionRewind(h, newLen) })
}

func (l *library) clear(h sessionHandle) error {
	if h == 0 {
		return errZeroHandle("clear", "session")
	}
	return l.call("clear", func() int32 { return l.sessionClear(h) })
}

func (l *library) length(h sessionHandle) (int, error) {
	if h == 0 {
		return 0, errZeroHandle("length", "session")
	}
	var n int32
	err := l.call("length", func() int32 { return l.sessionLength(h, &n) })
	return int(n), err
}

func (l *library) capacity(h sessionHandle) (int, error) {
	if h == 0 {
		return 0, errZeroHandle("capacity", "session")
	}
	var n int32
	err := l.call("capacity", func() int32 { return l.sessionCapacity(h, &n) })
	return int(n), err
}

func (l *library) canExtend(h sessionHandle, n int32) (bool, error) {
	if h == 0 {
		return false, errZeroHandle("can_extend", "session")
	}
	var ok int32
	err := l.call("can_extend", func() int32 { return l.sessionCanExtend(h, n, &ok) })
	return ok != 0, err
}

// closeSession releases the session; closing zero is a no-op.
func (l *library) closeSession(h sessionHandle) error {
	if h == 0 {
		return nil
	}
	return l.call("session_close", func() int32 { return l.sessionClose(h) })
}
