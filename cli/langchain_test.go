package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"etchat/internal/fixtures"
)

// TestServeLangChainStructured: LangChain.js's withStructuredOutput
// (tests/openai-client/langchain.mjs) gets an object of its schema from
// the random-weight fixture through response_format json_schema. Skipped
// without node or the package, except under CI=true.
func TestServeLangChainStructured(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the LangChain test needs Node 18 or later")
	}
	dir, _ := filepath.Abs(filepath.Join("..", "tests", "openai-client"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@langchain", "openai", "package.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("@langchain/openai is not installed in %s: run scripts/setup (%v)", dir, err)
		}
		t.Skipf("@langchain/openai is not installed in %s: run scripts/setup", dir)
	}
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	base := startServe(t, "--models", pte, "--engine", "cpu", "--api-key", "test-key", "--no-save")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "langchain.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ETCHAT_BASE_URL="+base, "ETCHAT_API_KEY=test-key", "ETCHAT_MODEL=llama3-tiny-offgraph")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node langchain.mjs: %v\n%s", err, out)
	}
	var got struct {
		Person map[string]any `json:"person"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil || len(got.Person) != 3 {
		t.Errorf("langchain's report: %v %s", err, out)
	}
}

// TestServeRunTools: the npm client's runTools agent loop
// (tests/openai-client/tools.mjs) against etchat serve, in each tool-call
// format: the qwen3 fixture with a short Hermes tool template
// (fixtures.QwenShortTools) and the llama3 fixture with a short Llama
// 3.x JSON one (fixtures.LlamaShortTools): a forced call, the function
// run by the client, its result sent back, plain and streamed. Skipped
// without node or the package, except under CI=true.
func TestServeRunTools(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the runTools test needs Node 18 or later")
	}
	dir, _ := filepath.Abs(filepath.Join("..", "tests", "openai-client"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("openai is not installed in %s: run scripts/setup (%v)", dir, err)
		}
		t.Skipf("openai is not installed in %s: run scripts/setup", dir)
	}
	for _, c := range []struct {
		format string
		folder func(testing.TB) string
	}{{"hermes", fixtures.QwenShortTools}, {"llama3-json", fixtures.LlamaShortTools}} {
		t.Run(c.format, func(t *testing.T) {
			pte := filepath.Join(c.folder(t), "model.pte")
			base := startServe(t, "--models", pte, "--engine", "cpu", "--api-key", "test-key", "--no-save")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "tools.mjs")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "ETCHAT_BASE_URL="+base, "ETCHAT_API_KEY=test-key")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("node tools.mjs: %v\n%s", err, out)
			}
			var got struct {
				Calls           []string
				Plain, Streamed string
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil || len(got.Calls) != 2 || !json.Valid([]byte(got.Plain)) || !json.Valid([]byte(got.Streamed)) {
				t.Errorf("tools.mjs's report: %v %s", err, out)
			}
			t.Logf("%s", lines[len(lines)-1])
		})
	}
}
