//go:build unix

package tokenizer

import (
	"os"
	"syscall"
)

// readFile returns the contents of a file and a function releasing them.
// A large file is mapped rather than read: its pages come from the page
// cache without a copy, 64 KB a fault instead of 4 KB (and tokenizer.json
// files run to tens of MB). Parse keeps no reference to its input, so the
// mapping is released once Parse returns. (As with any mapping, a file
// truncated by another process during those tenths of a second would
// fault.)
func readFile(path string) ([]byte, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if size := st.Size(); st.Mode().IsRegular() && size >= 1<<20 && size < 1<<40 && int64(int(size)) == size {
		if data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE); err == nil {
			return data, func() { _ = syscall.Munmap(data) }, nil
		}
	}
	data, err := os.ReadFile(path)
	return data, func() {}, err
}
