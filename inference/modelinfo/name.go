package modelinfo

import (
	"path/filepath"
	"strings"
)

// DisplayName is a model's name wherever etchat shows or records it (the
// library, runs, benchmarks): the file name without extension, or the
// folder's name when the file is the usual model.pte.
func DisplayName(path string) string {
	base := filepath.Base(path)
	if strings.EqualFold(base, "model.pte") {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs // "model.pte" in the model's own folder is named by that folder too
		}
		if dir := filepath.Base(filepath.Dir(path)); dir != "." && dir != string(filepath.Separator) {
			return dir
		}
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}
