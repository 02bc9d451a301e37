// Package inference is etchat's engine-neutral generation layer: it re-exports
// the engine contract (package inference/engine), picks an engine
// (auto|cpu|metal), runs the generation loop (chunked prefill, sampling, stop
// set, streaming, ExecuTorch-style stats) and keeps conversations (turns,
// cache positions, undo / reset / regenerate / edit with a re-prefill
// fallback when the cache refuses a rewind). It knows engine sessions and
// tokenizers, not the GUI, the store or the command line.
package inference

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"etchat/inference/engine"
)

// The engine contract, re-exported so callers need one import.
type (
	// Engine opens models.
	Engine = engine.Engine
	// Session is one model's loaded program and KV cache.
	Session = engine.Session
	// Memory is what a session holds, in bytes.
	Memory = engine.Memory
)

// Errors of the engine contract.
var (
	ErrRewindRefused = engine.ErrRewindRefused
	ErrCacheFull     = engine.ErrCacheFull
	ErrUnsupported   = engine.ErrUnsupported
	ErrClosed        = engine.ErrClosed
)

// Engine kinds accepted by OpenEngine.
const (
	EngineAuto  = "auto"
	EngineCPU   = "cpu"
	EngineMetal = "metal"
)

// Constructor makes an engine; it fails with a reason a person can read when
// the engine cannot run here (for Metal: no native runner library, not macOS).
type Constructor func() (Engine, error)

var (
	registryMu sync.Mutex
	registry   = map[string]Constructor{}
)

// RegisterEngine makes an engine available to OpenEngine under name ("cpu",
// "metal"). The program's wiring (main, the CLI, the app) registers the
// engines it links in, so this package imports none of them and the engines
// import only inference/engine. Registering a name again replaces it; a nil
// constructor removes it.
func RegisterEngine(name string, ctor Constructor) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if ctor == nil {
		delete(registry, name)
		return
	}
	registry[name] = ctor
}

// RegisterEngineDefault registers ctor under name unless something is
// registered there already.
func RegisterEngineDefault(name string, ctor Constructor) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, ok := registry[name]; !ok && ctor != nil {
		registry[name] = ctor
	}
}

func lookup(name string) Constructor {
	registryMu.Lock()
	defer registryMu.Unlock()
	return registry[name]
}

// Engines lists the registered engine names, sorted.
func Engines() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Selection is the engine OpenEngine chose and why.
type Selection struct {
	Engine Engine
	Name   string // "cpu" or "metal"
	Reason string // why this one, e.g. "auto: native runner library not found"
}

// String is the one-line announcement: "engine: cpu (auto: …)".
func (s Selection) String() string {
	if s.Reason == "" {
		return "engine: " + s.Name
	}
	return fmt.Sprintf("engine: %s (%s)", s.Name, s.Reason)
}

// ErrNoEngine: the asked engine is not available in this build or on this
// machine.
var ErrNoEngine = errors.New("engine not available")

// OpenEngine picks an engine: "cpu", "metal", or "auto" (Metal when its
// native runner loads, else the CPU engine, saying why). An unknown kind is
// an error naming the choices.
func OpenEngine(kind string) (Selection, error) {
	k := strings.ToLower(strings.TrimSpace(kind))
	if k == "" {
		k = EngineAuto
	}
	switch k {
	case EngineCPU, EngineMetal:
		ctor := lookup(k)
		if ctor == nil {
			return Selection{}, fmt.Errorf("%w: the %s engine is not part of this build", ErrNoEngine, k)
		}
		e, err := ctor()
		if err != nil {
			if strings.HasPrefix(err.Error(), k+":") {
				return Selection{}, fmt.Errorf("%w: %v", ErrNoEngine, err)
			}
			return Selection{}, fmt.Errorf("%w: %s: %v", ErrNoEngine, k, err)
		}
		return Selection{Engine: e, Name: k, Reason: "asked for"}, nil
	case EngineAuto:
		why := "native runner library not found"
		if ctor := lookup(EngineMetal); ctor != nil {
			e, err := ctor()
			if err == nil {
				return Selection{Engine: e, Name: EngineMetal, Reason: "auto: native runner library loaded"}, nil
			}
			why, _, _ = strings.Cut(err.Error(), "\n") // the first line; the rest is the search list
			why = strings.TrimSuffix(strings.TrimSpace(why), ";")
			why = strings.TrimSuffix(why, "; tried:")
		}
		ctor := lookup(EngineCPU)
		if ctor == nil {
			return Selection{}, fmt.Errorf("%w: no engine registered (metal: %s)", ErrNoEngine, why)
		}
		e, err := ctor()
		if err != nil {
			return Selection{}, fmt.Errorf("%w: cpu: %v (metal: %s)", ErrNoEngine, err, why)
		}
		return Selection{Engine: e, Name: EngineCPU, Reason: "auto: " + why}, nil
	}
	return Selection{}, fmt.Errorf("unknown engine %q (auto|cpu|metal)", kind)
}
