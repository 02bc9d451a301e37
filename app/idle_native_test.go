package app

import (
	"context"
	"testing"

	"etchat/inference/mlx"
	"etchat/internal/fixtures"
	"etchat/internal/nativelib"
)

// The native engine parks a closed session for the next conversation on
// the same model; the chat releases it when it unloads the model (another
// model, the window closing) or changes engine. Real library.
func TestChatReleasesParkedNativeSessions(t *testing.T) {
	lib := nativelib.Require(t)
	eng, err := mlx.New(mlx.Options{Library: lib})
	if err != nil {
		t.Fatal(err)
	}
	parked := eng.(*mlx.Engine)
	if err := parked.CloseIdle(); err != nil {
		t.Fatal(err)
	}
	b, _ := testBackend(t)
	b.Opener = &engineOpener{getenv: func(k string) string {
		if k == mlx.EnvLibrary {
			return lib
		}
		return ""
	}}
	path := modelCopy(t, fixtures.Llama3, true)
	c, errs := newTestChat(t, b, inspect(t, path))
	native := greedy(4)
	native.Engine = "mlx"
	cpu := greedy(4)

	// A second conversation parks the first's session; unloading the model
	// releases it.
	run(t, c, errs, c.NewConversation(native))
	run(t, c, errs, c.NewConversation(native))
	if n := parked.Idle(); n != 1 {
		t.Fatalf("%d sessions parked after a second conversation, want 1", n)
	}
	if err := c.SetModel(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := parked.Idle(); n != 0 {
		t.Errorf("%d native sessions still parked after the model was unloaded", n)
	}

	// Changing to the CPU engine releases the native engine's parked one.
	if err := c.SetModel(context.Background(), inspect(t, path)); err != nil {
		t.Fatal(err)
	}
	run(t, c, errs, c.NewConversation(native))
	run(t, c, errs, c.ApplySettings(cpu))
	if st := c.State(); st.Engine.Name != "cpu" {
		t.Fatalf("engine %q after switching to cpu", st.Engine.Name)
	}
	if n := parked.Idle(); n != 0 {
		t.Errorf("%d native sessions still parked after switching to the CPU engine", n)
	}

	// And closing the window releases what the last conversation parked.
	run(t, c, errs, c.ApplySettings(native))
	run(t, c, errs, c.NewConversation(native))
	c.Close()
	if n := parked.Idle(); n != 0 {
		t.Errorf("%d native sessions still parked after Close", n)
	}
}
