// Package inference is etchat's engine-neutral generation layer: it picks
// an engine from the registry of package inference/engine (callers import
// the Engine/Session contract from there too), loads a model with
// everything a run needs (Load), runs the generation loop (chunked
// prefill, sampling, stop set, streaming, ExecuTorch-style stats) and
// keeps conversations (turns, cache positions, undo / reset / regenerate
// / edit with a re-prefill fallback when the cache refuses a rewind). It
// imports no engine (the program's wiring registers them: package
// internal/engines), and knows neither the GUI, the store nor the command
// line.
package inference

import (
	"errors"
	"fmt"
	"strings"

	"etchat/inference/engine"
)

// Selection is the engine chosen for a model and why.
type Selection struct {
	Engine engine.Engine
	Name   string // canonical: "cpu" or "mlx"
	Device string // what it computes on: "cpu", "metal" or "cuda"
	Reason string // why this one, e.g. "auto: native runner library not found"
	// Auto is set when the choice was auto; Fallback when auto wanted the
	// native engine and fell back to the CPU engine.
	Auto, Fallback bool
	// Numerics is the mode the opened session computes in (set by
	// Model.OpenOn): engine.NumericsFast, or "" for exact, the reference
	// and the only mode of engines without modes.
	Numerics string
}

// String is the one-line announcement: "engine: cpu on cpu (auto: …)".
func (s Selection) String() string {
	out := fmt.Sprintf("engine: %s on %s", s.Name, s.Device)
	if s.Reason != "" {
		out += " (" + s.Reason + ")"
	}
	if s.Numerics == engine.NumericsFast {
		out += ", numerics fast" // exact, the reference, goes unsaid
	}
	return out
}

// cpuFaster is what auto says when the native engine would run on MLX's
// CPU backend (measured on llama-bench-bf16, see docs/performance.md).
const cpuFaster = "ExecuTorch + MLX would run on MLX's CPU backend here; the Go CPU engine is ~6–9× faster"

// OpenEngine picks an engine by choice (see engine.Choices) without a
// runner library override. See SelectEngine.
func OpenEngine(choice string) (Selection, error) { return SelectEngine(choice, engine.Config{}) }

// SelectEngine picks an engine: an explicit choice is that engine or an
// error (wrapping engine.ErrNotAvailable, and the constructor's own typed
// error such as *engine.LibraryError); auto is the native engine when it
// loads and runs on a GPU, else the CPU engine, with the reason. An
// unknown choice is an *engine.UnknownError.
func SelectEngine(choice string, cfg engine.Config) (Selection, error) {
	name, err := engine.Canonical(choice)
	if err != nil {
		return Selection{}, err
	}
	if name != engine.Auto {
		e, err := construct(name, cfg)
		if err != nil {
			return Selection{}, err
		}
		return Selection{Engine: e, Name: name, Device: engine.DeviceOf(e, engine.HostOS), Reason: "asked for"}, nil
	}
	why := "no native engine in this build"
	for _, k := range engine.Kinds() {
		if !k.Native || engine.Lookup(k.Name) == nil {
			continue
		}
		e, err := construct(k.Name, cfg)
		if err != nil {
			why = summary(err)
			continue
		}
		dev := engine.DeviceOf(e, engine.HostOS)
		if !engine.IsGPU(dev) {
			why = cpuFaster
			continue
		}
		return Selection{Engine: e, Name: k.Name, Device: dev, Reason: "auto: native runner library loaded, " + dev, Auto: true}, nil
	}
	return cpuFallback(why, cfg)
}

// cpuFallback is auto's CPU choice, saying why.
func cpuFallback(why string, cfg engine.Config) (Selection, error) {
	e, err := construct(engine.CPU, cfg)
	if err != nil {
		return Selection{}, fmt.Errorf("%w (native: %s)", err, why)
	}
	return Selection{Engine: e, Name: engine.CPU, Device: engine.DeviceOf(e, engine.HostOS), Reason: "auto: " + why, Auto: true, Fallback: true}, nil
}

func construct(name string, cfg engine.Config) (engine.Engine, error) {
	ctor := engine.Lookup(name)
	if ctor == nil {
		return nil, &engine.NotAvailableError{Name: name}
	}
	e, err := ctor(cfg)
	if err != nil {
		return nil, &engine.NotAvailableError{Name: name, Err: err}
	}
	return e, nil
}

// summary is a failure in one line for an announcement: a library
// problem's summary, else the error's text on one line.
func summary(err error) string {
	var le *engine.LibraryError
	if errors.As(err, &le) {
		return le.Summary()
	}
	return oneLine(err)
}

// oneLine is an error's text for a one-line announcement (formatting only:
// nothing is decided on it).
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
