package cli

import (
	"flag"
	"strings"
)

// gflagsSpellings rewrites args so that every flag may also be written the
// way ExecuTorch's runner defines it for gflags, with underscores
// (--kv_max_capacity, --max_new_tokens): gflags accepts both spellings and
// the runner's README uses hyphens, so commands in the wild use either.
// Only flag names are touched, and only where the hyphenated name is one of
// fs's flags; values, arguments after "--" and after the first non-flag
// are left as they are (the flag package stops there too).
func gflagsSpellings(fs *flag.FlagSet, args []string) []string {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		dashes := "-"
		if strings.HasPrefix(a, "--") {
			dashes = "--"
		}
		name, value, hasValue := strings.Cut(a[len(dashes):], "=")
		f := fs.Lookup(name)
		if f == nil && strings.Contains(name, "_") {
			if f = fs.Lookup(strings.ReplaceAll(name, "_", "-")); f != nil {
				out[i] = dashes + f.Name
				if hasValue {
					out[i] += "=" + value
				}
			}
		}
		// A flag that takes a value and has none after "=" consumes the
		// next argument, which must not be read as a flag.
		if f != nil && !hasValue && !isBoolFlag(f) {
			i++
		}
	}
	return out
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
