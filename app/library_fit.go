package app

import (
	"sync"

	"etchat/inference/engine"
)

// FitFunc is the model at path with a KV cache of cacheBytes against the
// memory the native engine's device lets it use (engine.FitReporter).
type FitFunc func(path string, cacheBytes int64) (engine.Fit, error)

// SetFit makes the details pane say, before anything is loaded, whether the
// selected model fits the device's working set (nil: it says nothing).
func (l *Library) SetFit(f FitFunc) {
	l.mu.Lock()
	l.fit = f
	l.mu.Unlock()
	l.changed()
}

// fitLine is the details pane's fit sentence for the model at path with a
// full cache of cache bytes, "" when there is no fit to show (no native
// engine, a working set it cannot say).
func (l *Library) fitLine(path string, cache int64) string {
	l.mu.Lock()
	fit := l.fit
	l.mu.Unlock()
	if fit == nil {
		return ""
	}
	f, err := fit(path, cache)
	if err != nil || !f.Known() {
		return ""
	}
	verdict := "fits"
	if !f.Fits() {
		verdict = "does not fit: the native engine refuses it; lower the capacity or pick a smaller model"
	}
	return ". With the weights: " + engine.GiB(f.Need()) + " of the " + f.Device + " working set's " + engine.GiB(f.WorkingSet) + ", " + verdict
}

// nativeFit is the fit the native engine reports, from the window's opener
// (the engine registry and the runner library preference); nil when the
// opener cannot open engines. The engine is opened once, in the background,
// at the first fit asked for (loading the library brings the device up,
// which the window must not wait for): until then, and where it does not
// load or cannot say, no fit is shown; ready is called once it can say.
func nativeFit(o Opener, ready func()) FitFunc {
	eo, ok := o.(interface {
		OpenEngine(kind string) (engine.Engine, error)
	})
	if !ok {
		return nil
	}
	var (
		mu      sync.Mutex
		started bool
		fr      engine.FitReporter
	)
	return func(path string, cache int64) (engine.Fit, error) {
		mu.Lock()
		if !started {
			started = true
			go func() {
				e, err := eo.OpenEngine(engine.MLX)
				r, ok := e.(engine.FitReporter)
				if err != nil || !ok {
					return
				}
				mu.Lock()
				fr = r
				mu.Unlock()
				ready()
			}()
		}
		r := fr
		mu.Unlock()
		if r == nil {
			return engine.Fit{}, nil
		}
		return r.Fit(path, cache)
	}
}
