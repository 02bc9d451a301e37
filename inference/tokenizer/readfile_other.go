//go:build !unix

package tokenizer

import "os"

// readFile returns the contents of a file and a function releasing them.
func readFile(path string) ([]byte, func(), error) {
	data, err := os.ReadFile(path)
	return data, func() {}, err
}
