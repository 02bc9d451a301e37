package inference

import (
	"errors"
	"strings"
	"testing"
)

func TestOpenEngine(t *testing.T) {
	// The linked-in engines: on a machine without the native runner, auto
	// falls back to the CPU engine and says why.
	sel, err := OpenEngine("cpu")
	if err != nil || sel.Name != "cpu" || sel.Engine.Name() != "cpu" {
		t.Fatalf("cpu: %+v, %v", sel, err)
	}
	if _, err := OpenEngine("tpu"); err == nil || !strings.Contains(err.Error(), "auto|cpu|metal") {
		t.Errorf("unknown engine: %v", err)
	}

	saveCPU, saveMetal := lookup(EngineCPU), lookup(EngineMetal)
	defer func() { RegisterEngine(EngineCPU, saveCPU); RegisterEngine(EngineMetal, saveMetal) }()
	cpu := &zeroEngine{vocab: 4}
	RegisterEngine(EngineCPU, func() (Engine, error) { return cpu, nil })
	RegisterEngine(EngineMetal, func() (Engine, error) { return nil, errors.New("native runner library not found") })
	sel, err = OpenEngine("auto")
	if err != nil || sel.Engine != Engine(cpu) || sel.Reason != "auto: native runner library not found" {
		t.Errorf("auto without metal: %+v, %v", sel, err)
	}
	if !strings.Contains(sel.String(), "native runner library not found") {
		t.Errorf("announcement %q", sel.String())
	}
	if _, err := OpenEngine("metal"); !errors.Is(err, ErrNoEngine) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("metal asked for, unavailable: %v", err)
	}
	metal := &zeroEngine{vocab: 5}
	RegisterEngine(EngineMetal, func() (Engine, error) { return metal, nil })
	if sel, err := OpenEngine(""); err != nil || sel.Name != "metal" || sel.Engine != Engine(metal) {
		t.Errorf("auto with metal: %+v, %v", sel, err)
	}
	RegisterEngine(EngineMetal, nil)
	RegisterEngine(EngineCPU, nil)
	if _, err := OpenEngine("auto"); !errors.Is(err, ErrNoEngine) {
		t.Errorf("no engines: %v", err)
	}
	if got := Engines(); len(got) != 0 {
		t.Errorf("Engines() = %v after removing both", got)
	}
}
