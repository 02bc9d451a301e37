package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"etchat/inference/tokenizer"
)

// batchGC makes the garbage collector wait until the heap nears 1 GiB
// (unless the environment set a memory limit) for a one-shot command whose
// allocations are mostly the tokenizer it keeps: loading Gemma 3's then
// takes a fifth less CPU. It returns the function that restores the
// settings.
func batchGC() func() {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {}
	}
	limit := debug.SetMemoryLimit(1 << 30)
	pct := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}

// loadTokenizer loads a tokenizer.json, or the one in a model folder.
func loadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	if path == "" {
		return nil, Usagef("--tokenizer is required")
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	return tokenizer.Load(path)
}

type tokenizeResult struct {
	IDs    []int    `json:"ids"`
	Tokens []string `json:"tokens"`
}

// runTokenize encodes the text on stdin and prints its token ids.
func runTokenize(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "tokenize", "--tokenizer PATH [--add-special] [--json | --jsonl] < text")
	tokPath := fs.String("tokenizer", "", "tokenizer.json, or a folder holding one")
	addSpecial := fs.Bool("add-special", false, "add the special tokens of the tokenizer's post-processor (e.g. a BOS)")
	asJSON := fs.Bool("json", false, `print {"ids":[...],"tokens":[...]} instead of bare ids`)
	asJSONL := fs.Bool("jsonl", false, "batch mode: every stdin line is a JSON string; print one JSON object per line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (the text is read from stdin)", fs.Arg(0))
	}
	if *asJSON && *asJSONL {
		return Usagef("--json and --jsonl are exclusive")
	}
	if !*asJSONL { // a batch may run long: keep the collector on for it
		defer batchGC()()
	}
	tk, err := loadTokenizer(*tokPath)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(env.Stdout, 1<<16)
	defer out.Flush()
	if *asJSONL {
		return tokenizeLines(ctx, env.Stdin, out, tk, *addSpecial)
	}
	data, err := io.ReadAll(env.Stdin)
	if err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	ids, toks := tk.EncodeTokens(string(data), *addSpecial)
	if *asJSON {
		b, err := json.Marshal(tokenizeResult{IDs: ids, Tokens: toks})
		if err != nil {
			return err
		}
		out.Write(b)
		out.WriteByte('\n')
		return out.Flush()
	}
	buf := make([]byte, 0, 8*len(ids)+1)
	for i, id := range ids {
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = strconv.AppendInt(buf, int64(id), 10)
	}
	buf = append(buf, '\n')
	out.Write(buf)
	return out.Flush()
}

func tokenizeLines(ctx context.Context, in io.Reader, out *bufio.Writer, tk *tokenizer.Tokenizer, addSpecial bool) error {
	r := bufio.NewReaderSize(in, 1<<16)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, err := r.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading stdin: %w", err)
		}
		if s := strings.TrimSpace(line); s != "" {
			var text string
			if jerr := json.Unmarshal([]byte(s), &text); jerr != nil {
				return fmt.Errorf("line %d: not a JSON string: %v", n, jerr)
			}
			ids, toks := tk.EncodeTokens(text, addSpecial)
			b, merr := json.Marshal(tokenizeResult{IDs: ids, Tokens: toks})
			if merr != nil {
				return merr
			}
			out.Write(b)
			out.WriteByte('\n')
		}
		if err != nil { // io.EOF
			return out.Flush()
		}
	}
}

// runDetokenize decodes the token ids on stdin and prints exactly the
// text, without an added newline.
func runDetokenize(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "detokenize", "--tokenizer PATH [--skip-special] < ids")
	tokPath := fs.String("tokenizer", "", "tokenizer.json, or a folder holding one")
	skip := fs.Bool("skip-special", false, "leave out special tokens (e.g. <|eot_id|>)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (the ids are read from stdin)", fs.Arg(0))
	}
	defer batchGC()()
	tk, err := loadTokenizer(*tokPath)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(env.Stdin)
	if err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	fields := strings.FieldsFunc(string(data), func(r rune) bool {
		return r == ',' || r == '[' || r == ']' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	ids := make([]int, 0, len(fields))
	for _, f := range fields {
		id, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("%q is not a token id", f)
		}
		if id < 0 || id >= tk.VocabSize() {
			return fmt.Errorf("token id %d is outside the vocabulary (0..%d)", id, tk.VocabSize()-1)
		}
		if _, ok := tk.Token(id); !ok {
			return fmt.Errorf("token id %d is not assigned in this vocabulary", id)
		}
		ids = append(ids, id)
	}
	_, err = io.WriteString(env.Stdout, tk.Decode(ids, *skip))
	return err
}
