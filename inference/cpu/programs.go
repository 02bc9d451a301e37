package cpu

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// programs shares an engine's loaded programs between its sessions: the
// file's mapping, the bound weights and what the init chain computed are
// read-only once loaded, so every session on the same file uses one copy,
// and the init chain runs once per loaded program, not per session. The
// last session to close unmaps it.
type programs struct {
	mu   sync.Mutex
	open map[progKey]*model
}

// progKey names a file's version: a file replaced in place (another size
// or modification time) loads anew.
type progKey struct {
	path        string
	size, mtime int64
}

// acquire loads path (or shares it when loaded), with the fast numerics
// mode's kernels for its quantized matrices when int8 (the engine's mode:
// every program of one engine has the same).
func (p *programs) acquire(path string, int8 bool) (*model, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	key := progKey{abs, st.Size(), st.ModTime().UnixNano()}
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.open[key]; m != nil {
		m.refs++
		return m, nil
	}
	m, err := load(path)
	if err != nil {
		return nil, err
	}
	if int8 {
		m.useInt8()
	}
	if p.open == nil {
		p.open = map[progKey]*model{}
	}
	m.refs = 1
	m.release = func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if m.refs--; m.refs > 0 {
			return nil
		}
		if p.open[key] == m {
			delete(p.open, key)
		}
		return m.close()
	}
	p.open[key] = m
	return m, nil
}

// done is a session's release of its program.
func (m *model) done() error {
	if m.release != nil {
		return m.release()
	}
	return m.close()
}
