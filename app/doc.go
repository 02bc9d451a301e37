// Package app is etchat's desktop window (Fyne): the model library, the
// chat and the benchmarks history.
//
// Screen state and actions live in plain Go view-models (Library, Chat,
// SettingsForm, Benchmarks, Prefs) that tests drive without a window; the
// widget files bind to them and only redraw, through fyne.Do, when a
// view-model reports a change. Long work (reading a model, loading it,
// prefill and decode) runs off the UI goroutine and is cancellable.
//
// The view-models reach the packages below through the small interfaces of
// ports.go; backend.go adapts inference/modelinfo, the inference
// conversation and the store to them. Only run.go imports the GLFW driver
// (fyne.io/fyne/v2/app, cgo); everything else builds and tests with
// CGO_ENABLED=0.
package app
