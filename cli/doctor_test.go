package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"etchat/store"
)

// fakeRunner builds the binding's C fake runner (inference/mlx/testdata) as
// a library for the doctor to load, or skips without a C compiler.
func fakeRunner(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil || (runtime.GOOS != "linux" && runtime.GOOS != "darwin") {
		t.Skip("needs cc on linux or darwin to build the fake runner")
	}
	lib := filepath.Join(t.TempDir(), "libetchat_runner.so")
	src := filepath.Join("..", "inference", "mlx", "testdata", "fake_runner.c")
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, src, "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, b)
	}
	return lib
}

// etchat doctor, in text and --json: the platform, the native engine's
// library and the device it brought up (or why it is not usable, with the
// hint), the database and its integrity, and the stored models' folders
// (a missing one said so); it creates nothing.
func TestDoctor(t *testing.T) {
	ctx := context.Background()
	lib := fakeRunner(t)
	models := t.TempDir()
	path := filepath.Join(t.TempDir(), "etchat.db")
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.UpsertModel(ctx, store.Model{Path: filepath.Join(models, "a.pte"), SHA256: "aa", DisplayName: "A"})
	db.UpsertModel(ctx, store.Model{Path: filepath.Join(models, "b.pte"), SHA256: "bb", DisplayName: "B"})
	db.UpsertModel(ctx, store.Model{Path: "/gone/c.pte", SHA256: "cc", DisplayName: "C"})
	db.Close()

	r := runCLI(t, nil, "", "doctor", "--db", path, "--library", lib, "--json")
	if r.code != 0 {
		t.Fatalf("doctor --json: exit %d\n%s", r.code, r.stderr)
	}
	var rep struct {
		Platform struct{ GOOS, GOARCH string }
		Engine   struct {
			Usable bool
			Facts  struct {
				Library, Device string
				DeviceName      string `json:"device_name"`
			}
		} `json:"native_engine"`
		Database struct {
			Path      string
			Exists    bool
			Integrity string
		}
		Models []struct {
			Dir    string
			Models int
			Exists bool
		} `json:"model_folders"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if rep.Platform.GOOS != runtime.GOOS || rep.Platform.GOARCH != runtime.GOARCH {
		t.Errorf("platform %+v", rep.Platform)
	}
	if !rep.Engine.Usable || rep.Engine.Facts.Library != lib || rep.Engine.Facts.Device != "cpu" || rep.Engine.Facts.DeviceName != "C fake" {
		t.Errorf("engine %+v", rep.Engine)
	}
	if rep.Database.Path != path || !rep.Database.Exists || rep.Database.Integrity != "ok" {
		t.Errorf("database %+v", rep.Database)
	}
	if len(rep.Models) != 2 || rep.Models[0].Dir != "/gone" || rep.Models[0].Exists ||
		rep.Models[1].Dir != models || rep.Models[1].Models != 2 || !rep.Models[1].Exists {
		t.Errorf("model folders %+v", rep.Models)
	}

	r = runCLI(t, nil, "", "doctor", "--db", path, "--library", lib)
	for _, want := range []string{"platform:        " + runtime.GOOS + "/" + runtime.GOARCH, "native engine:   usable: " + lib,
		"device:          cpu (C fake), started in ", "(integrity: ok)", "/gone: 1 model(s) (missing)", models + ": 2 model(s)\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("text lacks %q:\n%s", want, r.stdout)
		}
	}

	// A file that is no library, a damaged database, no database at all.
	bad := filepath.Join(t.TempDir(), "libetchat_runner.so")
	os.WriteFile(bad, []byte("not a library"), 0o644)
	junk := filepath.Join(t.TempDir(), "etchat.db")
	os.WriteFile(junk, []byte("not a database at all"), 0o600)
	r = runCLI(t, nil, "", "doctor", "--db", junk, "--library", bad)
	if r.code != 0 || !strings.Contains(r.stdout, "native engine:   not usable: native runner library does not load: ") || !strings.Contains(r.stdout, bad+": it is not a shared library") ||
		!strings.Contains(r.stdout, "hint: ") || !strings.Contains(r.stdout, "(integrity: ") || strings.Contains(r.stdout, "(integrity: ok)") {
		t.Errorf("unusable library, damaged database: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(junk); !bytes.Equal(b, []byte("not a database at all")) {
		t.Error("the damaged database was changed")
	}
	none := filepath.Join(t.TempDir(), "etchat.db")
	r = runCLI(t, nil, "", "doctor", "--db", none, "--library", bad)
	if !strings.Contains(r.stdout, none+" (not created yet)") {
		t.Errorf("no database:\n%s", r.stdout)
	}
	if _, err := os.Stat(none); err == nil {
		t.Error("doctor created a database")
	}
}
