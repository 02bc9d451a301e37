// Package locale makes the process's locale readable to Fyne before Fyne
// initialises. Under LANG=C.UTF-8 (the default in containers and CI) Fyne's
// locale lookup logs "Error parsing user locale C" on every start, CLI
// commands included. Imported for its side effect by main; Go initialises
// it before fyne.io packages because its import path sorts first and it
// depends only on the standard library.
package locale

import (
	"os"
	"strings"
)

func init() { Fix(os.Getenv, os.Setenv) }

// Fix sets LANGUAGE=en when the effective locale is a "C" or "POSIX"
// variant with an encoding suffix (C.UTF-8), which the locale library Fyne
// uses passes on as the language tag "C". LANGUAGE only steers message
// translations, so nothing else changes; a LANGUAGE the user set is kept.
func Fix(getenv func(string) string, setenv func(string, string) error) {
	if getenv("LANGUAGE") != "" {
		return
	}
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v := getenv(k)
		if v == "" {
			continue
		}
		if strings.HasPrefix(v, "C.") || strings.HasPrefix(v, "POSIX.") {
			_ = setenv("LANGUAGE", "en")
		}
		return
	}
}
