package locale

import "testing"

func TestFix(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"LANG": "C.UTF-8"}, "en"},
		{map[string]string{"LC_ALL": "POSIX.utf8", "LANG": "de_DE.UTF-8"}, "en"},
		{map[string]string{"LANG": "de_DE.UTF-8"}, ""},
		{map[string]string{"LC_ALL": "fr_FR.UTF-8", "LANG": "C.UTF-8"}, ""},
		{map[string]string{"LANG": "C"}, ""}, // plain C is handled by the library itself
		{map[string]string{"LANG": "C.UTF-8", "LANGUAGE": "sv"}, "sv"},
		{map[string]string{}, ""},
	}
	for _, c := range cases {
		env := map[string]string{}
		for k, v := range c.env {
			env[k] = v
		}
		Fix(func(k string) string { return env[k] }, func(k, v string) error { env[k] = v; return nil })
		if env["LANGUAGE"] != c.want {
			t.Errorf("%v: LANGUAGE = %q, want %q", c.env, env["LANGUAGE"], c.want)
		}
	}
}
