package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"etchat/inference"
	"etchat/inference/engine"
	"etchat/store"
)

const doctorSynopsis = `[--db PATH] [--library PATH] [--json]`

// doctorReport is what a bug report needs to know of this machine, as
// `etchat doctor` prints it (text, or this shape with --json).
type doctorReport struct {
	Version  string         `json:"version"`
	Platform doctorPlatform `json:"platform"`
	Engine   doctorEngine   `json:"native_engine"`
	Database doctorDB       `json:"database"`
	Models   []doctorFolder `json:"model_folders"`
}

type doctorPlatform struct {
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	// Rosetta: an amd64 etchat translated on an Apple-silicon Mac, where
	// the native engine (arm64 only) cannot load.
	Rosetta bool `json:"rosetta"`
}

type doctorEngine struct {
	Usable  bool                `json:"usable"`
	Problem string              `json:"problem,omitempty"` // why not, on one line
	Hint    string              `json:"hint,omitempty"`
	Facts   *engine.NativeFacts `json:"facts,omitempty"`
}

type doctorDB struct {
	Path      string `json:"path"`
	Exists    bool   `json:"exists"`
	Integrity string `json:"integrity,omitempty"` // "ok", or what is wrong
}

type doctorFolder struct {
	Dir    string `json:"dir"`
	Models int    `json:"models"`
	Exists bool   `json:"exists"`
}

// runDoctor prints the facts a bug report needs: platform, the native
// engine's library and device (bringing the device up, as every run does),
// the database and its integrity, the folders of the stored models. It
// changes nothing: a missing database is reported, not created.
func runDoctor(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "doctor", doctorSynopsis)
	dbFlag := fs.String("db", "", "database file (default $"+store.EnvVar+", else the user config folder's etchat/etchat.db)")
	lib := fs.String("library", "", "the native runner library to check (default: the engine's own search, $ETCHAT_RUNNER first)")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q", fs.Arg(0))
	}
	r := doctorReport{Version: Version, Platform: doctorPlatform{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Rosetta: translated()}}
	r.Engine = doctorNative(engine.Config{Library: *lib, Getenv: env.Getenv})
	r.Database, r.Models = doctorStore(ctx, env, *dbFlag)
	if r.Models == nil {
		r.Models = []doctorFolder{} // [] in JSON, not null
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	r.writeText(env.Stdout)
	return nil
}

// doctorNative loads the native engine the way --engine mlx does.
func doctorNative(cfg engine.Config) doctorEngine {
	sel, err := inference.SelectEngine(engine.MLX, cfg)
	if err != nil {
		d := doctorEngine{Problem: oneLine(err), Hint: hint(err)}
		var le *engine.LibraryError
		if errors.As(err, &le) {
			d.Problem = le.Summary()
		}
		return d
	}
	d := doctorEngine{Usable: true}
	if f, ok := sel.Engine.(engine.FactsReporter); ok {
		facts := f.Facts()
		d.Facts = &facts
	}
	return d
}

// doctorStore reports the database (not created when absent) and the
// folders its models live in.
func doctorStore(ctx context.Context, env *Env, flagPath string) (doctorDB, []doctorFolder) {
	path, err := store.ResolvePath(flagPath, env.Getenv)
	if err != nil {
		return doctorDB{Integrity: err.Error()}, nil
	}
	d := doctorDB{Path: path}
	if _, err := os.Stat(path); err != nil {
		return d, nil
	}
	d.Exists = true
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		d.Integrity = oneLine(storeError(err))
		return d, nil
	}
	defer db.Close()
	d.Integrity = "ok"
	if err := db.IntegrityCheck(ctx); err != nil {
		d.Integrity = oneLine(storeError(err))
	}
	models, err := db.ListModels(ctx)
	if err != nil {
		return d, nil
	}
	count := map[string]int{}
	for _, m := range models {
		count[filepath.Dir(m.Path)]++
	}
	var folders []doctorFolder
	for dir, n := range count {
		_, err := os.Stat(dir)
		folders = append(folders, doctorFolder{Dir: dir, Models: n, Exists: err == nil})
	}
	sort.Slice(folders, func(i, j int) bool { return folders[i].Dir < folders[j].Dir })
	return d, folders
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// writeMemory is the device's memory and working set lines.
func writeMemory(w io.Writer, f *engine.NativeFacts) {
	if f.MemoryBytes > 0 {
		fmt.Fprintf(w, "device memory:   %.1f GiB (the KV cache and weights share it)\n", float64(f.MemoryBytes)/(1<<30))
	}
	if f.WorkingSetBytes > 0 {
		fmt.Fprintf(w, "working set:     %.1f GiB (%s; a model's weights and KV cache at capacity must fit in it)\n",
			float64(f.WorkingSetBytes)/(1<<30), f.WorkingSetSource)
	}
}

func (r doctorReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "etchat %s\n", r.Version)
	plat := r.Platform.GOOS + "/" + r.Platform.GOARCH
	if r.Platform.Rosetta {
		plat += " under Rosetta (an amd64 etchat on Apple silicon: the native engine needs the arm64 build)"
	}
	fmt.Fprintf(w, "platform:        %s\n", plat)
	e := r.Engine
	if !e.Usable {
		fmt.Fprintf(w, "native engine:   not usable: %s\n", e.Problem)
		if e.Hint != "" {
			fmt.Fprintf(w, "                 hint: %s\n", e.Hint)
		}
	} else if f := e.Facts; f != nil {
		fmt.Fprintf(w, "native engine:   usable: %s\n", f.Library)
		dev := f.Device
		if f.DeviceName != "" {
			dev += " (" + f.DeviceName + ")"
		}
		fmt.Fprintf(w, "device:          %s, started in %s\n", dev, f.DeviceStart.Round(time.Microsecond))
		writeMemory(w, f)
		if f.Metallib != "" {
			fmt.Fprintf(w, "metallib:        %s (stamp %s; library %s)\n", f.Metallib, stampOrNone(f.MetallibStamp), stampOrNone(f.LibraryStamp))
		} else if r.Platform.GOOS == "darwin" {
			fmt.Fprintln(w, "metallib:        none given to MLX")
		}
	}
	switch {
	case r.Database.Path == "":
		fmt.Fprintf(w, "database:        unknown: %s\n", r.Database.Integrity)
	case !r.Database.Exists:
		fmt.Fprintf(w, "database:        %s (not created yet)\n", r.Database.Path)
	default:
		fmt.Fprintf(w, "database:        %s (integrity: %s)\n", r.Database.Path, r.Database.Integrity)
	}
	if len(r.Models) == 0 {
		fmt.Fprintln(w, "model folders:   none stored")
	}
	for i, f := range r.Models {
		label := "model folders:  "
		if i > 0 {
			label = "                "
		}
		missing := ""
		if !f.Exists {
			missing = " (missing)"
		}
		fmt.Fprintf(w, "%s %s: %d model(s)%s\n", label, f.Dir, f.Models, missing)
	}
}

func stampOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
