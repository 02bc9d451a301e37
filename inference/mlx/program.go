package mlx

// Header section 2: program.

// programHandle is an etchat_program*; zero means closed.
type programHandle uintptr

type programFuncs struct {
	programOpen  func(path string, out *programHandle) int32
	programVocab func(p programHandle, out *int64) int32
	programClose func(p programHandle) int32
}

func (f *programFuncs) bind(l *library) error {
	for _, s := range []struct {
		fptr any
		name string
	}{
		{&f.programOpen, "etchat_program_open"},
		{&f.programVocab, "etchat_program_vocab"},
		{&f.programClose, "etchat_program_close"},
	} {
		if err := l.symbol(s.fptr, s.name); err != nil {
			return err
		}
	}
	return nil
}

// openProgram loads the .pte at path (not its forward method).
func (l *library) openProgram(path string) (programHandle, error) {
	if path == "" {
		return 0, &Error{Op: "program_open", Status: StatusInvalidArgument, Msg: "program_open: empty path"}
	}
	var h programHandle
	err := l.call("program_open", func() int32 { return l.programOpen(path, &h) })
	if err != nil {
		return 0, err
	}
	return h, nil
}

// vocab is the size of a logits row.
func (l *library) vocab(h programHandle) (int64, error) {
	if h == 0 {
		return 0, errZeroHandle("program_vocab", "program")
	}
	var v int64
	err := l.call("program_vocab", func() int32 { return l.programVocab(h, &v) })
	return v, err
}

// closeProgram releases the program; closing zero is a no-op.
func (l *library) closeProgram(h programHandle) error {
	if h == 0 {
		return nil
	}
	return l.call("program_close", func() int32 { return l.programClose(h) })
}
