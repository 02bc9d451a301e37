package engine

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The engine choices. Auto lets etchat pick; the others name one engine.
const (
	Auto = "auto"
	CPU  = "cpu"
	MLX  = "mlx"
)

// Devices an engine reports.
const (
	DeviceCPU   = "cpu"
	DeviceMetal = "metal"
	DeviceCUDA  = "cuda"
)

// Kind is one engine etchat knows. The table below is the only list of
// engine names: flag help, validation and the app's lists read it.
type Kind struct {
	Name        string
	Aliases     []string // older or other names accepted for it (stored rows keep them)
	Description string
	// Native engines run ExecuTorch through the runner library; auto prefers
	// one when it runs on a GPU.
	Native bool
}

var kinds = []Kind{
	{Name: CPU, Description: "etchat's pure-Go engine, which executes the .pte's MLX graph on the CPU"},
	{Name: MLX, Aliases: []string{"metal"}, Native: true,
		Description: "ExecuTorch + MLX through the native runner library (Metal on a Mac, CUDA on NVIDIA, MLX's CPU backend otherwise)"},
}

const autoDescription = "the native engine when it runs on a GPU, else cpu"

// Kinds lists the engines etchat knows, in the order choices are shown.
func Kinds() []Kind { return append([]Kind(nil), kinds...) }

// Choices are the values an engine choice accepts, for lists: auto, then
// every engine's name (aliases are accepted but not listed).
func Choices() []string {
	out := []string{Auto}
	for _, k := range kinds {
		out = append(out, k.Name)
	}
	return out
}

// Help is the engine choices for a flag's help text.
func Help() string {
	parts := []string{Auto + " (" + autoDescription + ")"}
	for _, k := range kinds {
		p := k.Name + " (" + k.Description
		if len(k.Aliases) > 0 {
			p += "; also " + strings.Join(k.Aliases, ", ")
		}
		parts = append(parts, p+")")
	}
	return strings.Join(parts, ", ")
}

// UnknownError is an engine choice that names no engine.
type UnknownError struct{ Name string }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown engine %q: choose %s (or an alias: %s)", e.Name, strings.Join(Choices(), ", "), strings.Join(aliases(), ", "))
}

func aliases() []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k.Aliases...)
	}
	return out
}

// Canonical is the engine a choice names: "" and "auto" are Auto, an alias
// is its engine's name ("metal" is "mlx"), case and spaces aside. Anything
// else is an *UnknownError.
func Canonical(choice string) (string, error) {
	c := strings.ToLower(strings.TrimSpace(choice))
	if c == "" || c == Auto {
		return Auto, nil
	}
	for _, k := range kinds {
		if c == k.Name {
			return k.Name, nil
		}
		for _, a := range k.Aliases {
			if c == a {
				return k.Name, nil
			}
		}
	}
	return "", &UnknownError{Name: choice}
}

// Same reports whether two engine names (say, a stored row's and a filter's)
// name the same engine: "metal" and "mlx" do.
func Same(a, b string) bool {
	ca, errA := Canonical(a)
	cb, errB := Canonical(b)
	if errA != nil || errB != nil {
		return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
	}
	return ca == cb
}

// KindOf is the Kind of a canonical name.
func KindOf(name string) (Kind, bool) {
	for _, k := range kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Config is what a constructor may be told: the runner library to load
// ("" = the usual search) and the environment that search reads (nil =
// the process's). Engines ignore what does not concern them.
type Config struct {
	Library string
	Getenv  func(string) string
	// Numerics is the CPU engine's numerics mode (NumericsExact,
	// NumericsFast; "" = exact); other engines ignore it.
	Numerics string
}

// Constructor makes an engine. It fails with an error a person can act on
// when the engine cannot run here; a native engine's missing or mismatched
// library is a *LibraryError.
type Constructor func(Config) (Engine, error)

var (
	registryMu sync.Mutex
	registry   = map[string]Constructor{}
)

// Register makes the engine name available. The program's wiring (main,
// through package internal/engines) registers the engines it links in, so
// that no library package imports an engine. Registering again replaces;
// a nil constructor removes. name must be one of Kinds' names.
func Register(name string, ctor Constructor) {
	if _, ok := KindOf(name); !ok {
		panic("engine: Register of unknown engine " + name)
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if ctor == nil {
		delete(registry, name)
		return
	}
	registry[name] = ctor
}

// Lookup is the constructor registered for a canonical name, or nil.
func Lookup(name string) Constructor {
	registryMu.Lock()
	defer registryMu.Unlock()
	return registry[name]
}

// Registered lists the names with a constructor, in Kinds' order.
func Registered() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var out []string
	for _, k := range kinds {
		if registry[k.Name] != nil {
			out = append(out, k.Name)
		}
	}
	return out
}

// Devicer is implemented by engines that know the device they compute on.
type Devicer interface {
	Device() string
}

// NativeFacts is what a native engine knows of itself for a bug report
// (etchat doctor): its library, the device its library brought up, the
// metallib it gave MLX and both stamps, and what bringing the device up
// cost (paid once per process by every run that loads the library,
// auto's included).
type NativeFacts struct {
	Library     string `json:"library"`
	Device      string `json:"device"`
	DeviceName  string `json:"device_name,omitempty"`
	MemoryBytes int64  `json:"memory_bytes"`
	// WorkingSetBytes is what a model's weights and KV cache must fit in
	// (Fit), WorkingSetSource where the library read it; 0 and "" for a
	// library that cannot say.
	WorkingSetBytes  int64         `json:"working_set_bytes,omitempty"`
	WorkingSetSource string        `json:"working_set_source,omitempty"`
	Metallib         string        `json:"metallib,omitempty"`
	MetallibStamp    string        `json:"metallib_stamp,omitempty"`
	LibraryStamp     string        `json:"library_stamp,omitempty"`
	DeviceStart      time.Duration `json:"device_start_ns"`
}

// FactsReporter is implemented by engines that can describe themselves.
type FactsReporter interface {
	Facts() NativeFacts
}

// DeviceOf is the device e computes on: what e reports when it can say,
// else its kind's default on goos (DefaultDevice).
func DeviceOf(e Engine, goos string) string {
	if d, ok := e.(Devicer); ok {
		if dev := d.Device(); dev != "" {
			return dev
		}
	}
	k, _ := Canonical(e.Name())
	return DefaultDevice(k, goos)
}

// DefaultDevice is the device an engine that does not report one runs on:
// the CPU for an engine of ours, and DeviceUnknown for a native one, on
// every goos: a native engine's device is what its library reports (the
// binding brings the device up at load), never a guess from the platform,
// so auto never takes a native engine for a GPU it did not report.
func DefaultDevice(name, goos string) string {
	if k, ok := KindOf(name); ok && k.Native {
		return DeviceUnknown
	}
	return DeviceCPU
}

// DeviceUnknown is a native engine's device when its library reported
// none; it is not a GPU.
const DeviceUnknown = "unknown"

// IsGPU reports whether a device is a GPU.
func IsGPU(device string) bool { return device == DeviceMetal || device == DeviceCUDA }

// HostOS is runtime.GOOS, for callers of DeviceOf.
const HostOS = runtime.GOOS

// LibraryProblem is what is wrong with a native runner library.
type LibraryProblem int

// The library problems a user fixes.
const (
	LibraryMissing     LibraryProblem = iota // no candidate path holds a loadable library
	LibraryABIMismatch                       // built against another etchat_runner.h
	LibraryUnloadable                        // found, but it does not load (architecture, dependencies)
	LibraryNoDevice                          // loads, but MLX cannot start its device (no Metal device, a metallib it cannot load)
)

// LibraryError: the native engine's runner library cannot be used. Err is
// the binding's own error (paths tried, loader messages); Reason, when a
// library was found but cannot be used, is why, on one line (its path and,
// say, its ABI version or the missing mlx.metallib), for the announcements.
type LibraryError struct {
	Problem LibraryProblem
	Err     error
	Reason  string
}

func (e *LibraryError) Error() string { return e.Err.Error() }
func (e *LibraryError) Unwrap() error { return e.Err }

// Summary is the problem in a few words, for a one-line announcement,
// with the found library's Reason.
func (e *LibraryError) Summary() string {
	var s string
	switch e.Problem {
	case LibraryMissing:
		s = "native runner library not found"
	case LibraryABIMismatch:
		s = "native runner library built for another etchat (ABI version mismatch)"
	case LibraryNoDevice:
		s = "native runner library cannot start its device"
	default:
		s = "native runner library does not load"
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// ErrNotAvailable: the engine asked for is not part of this build or
// cannot run on this machine.
var ErrNotAvailable = errors.New("engine not available")

// NotAvailableError is ErrNotAvailable for one engine, with its
// constructor's error (nil: not part of this build).
type NotAvailableError struct {
	Name string
	Err  error
}

func (e *NotAvailableError) Error() string {
	if e.Err == nil {
		return "the " + e.Name + " engine is not part of this build"
	}
	return "the " + e.Name + " engine is not available: " + e.Err.Error()
}

func (e *NotAvailableError) Unwrap() []error { return []error{ErrNotAvailable, e.Err} }
