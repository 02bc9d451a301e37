package app

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// TestServeSwitch: the switch serves the chat's model on loopback, counts
// the requests it answered, and stops (twice is harmless).
func TestServeSwitch(t *testing.T) {
	s := &ServeSwitch{}
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	url, err := s.Start(pte, DefaultSettings("cpu"), "", nil, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if _, err := s.Start(pte, DefaultSettings("cpu"), "", nil, "127.0.0.1:0"); err == nil {
		t.Error("a second Start while running succeeded")
	}
	body := `{"model":"llama3-tiny-offgraph","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"temperature":0}`
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if resp.StatusCode != 200 || doc.Usage.CompletionTokens != 3 {
		t.Errorf("chat through the switch: %d %+v", resp.StatusCode, doc)
	}
	running, got, models, served := s.Status()
	if !running || got != url || len(models) != 1 || models[0] != "llama3-tiny-offgraph" || served != 1 {
		t.Errorf("status %v %q %v %d", running, got, models, served)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if running, _, _, _ := s.Status(); running {
		t.Error("still running after Stop")
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := http.Get(url + "/models"); err == nil {
		t.Error("the port still answers after Stop")
	}
}
