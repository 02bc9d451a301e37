package bench

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Formats are the output formats Write accepts.
var Formats = []string{"md", "csv", "json", "jsonl", "sql"}

// Record is one result as a flat row. Its first fields are llama-bench's
// `test` table (llama.cpp c392e50's columns, in its order, plus n_depth as
// later llama-bench writes it), so llama.cpp's compare-llama-bench.py reads
// the sql format and the csv/json/jsonl fields carry llama-bench's names;
// the llama.cpp settings etchat has no counterpart of hold llama-bench's
// "off" values. etchat's own fields follow (engine, model_sha256, the
// cache, TTFT, memory, machine, the samples as llama-bench's json has
// them).
type Record struct {
	BuildCommit string  `json:"build_commit" llama:"test"` // Options.BuildCommit, else AppVersion
	BuildNumber int     `json:"build_number" llama:"test"` // 0: etchat has no build numbers
	CPUInfo     string  `json:"cpu_info" llama:"test"`
	GPUInfo     string  `json:"gpu_info" llama:"test"`
	Backends    string  `json:"backends" llama:"test"`
	ModelFile   string  `json:"model_filename" llama:"test"`
	ModelType   string  `json:"model_type" llama:"test"`
	ModelSize   int64   `json:"model_size" llama:"test"`
	ModelParams int64   `json:"model_n_params" llama:"test"`
	NBatch      int     `json:"n_batch" llama:"test"`  // the prefill chunk
	NUBatch     int     `json:"n_ubatch" llama:"test"` // the same: one forward takes a chunk
	NThreads    int     `json:"n_threads" llama:"test"`
	CPUMask     string  `json:"cpu_mask" llama:"test"`
	CPUStrict   bool    `json:"cpu_strict" llama:"test"`
	Poll        int     `json:"poll" llama:"test"`
	TypeK       string  `json:"type_k" llama:"test"` // the KV dtype, as ggml names it: f32, f16, bf16
	TypeV       string  `json:"type_v" llama:"test"`
	NGPULayers  int     `json:"n_gpu_layers" llama:"test"` // 99 on a GPU, else 0
	SplitMode   string  `json:"split_mode" llama:"test"`
	MainGPU     int     `json:"main_gpu" llama:"test"`
	NoKVOffload bool    `json:"no_kv_offload" llama:"test"`
	FlashAttn   bool    `json:"flash_attn" llama:"test"`
	TensorSplit string  `json:"tensor_split" llama:"test"`
	UseMmap     bool    `json:"use_mmap" llama:"test"` // both engines map the weights
	Embeddings  bool    `json:"embeddings" llama:"test"`
	NPrompt     int     `json:"n_prompt" llama:"test"`
	NGen        int     `json:"n_gen" llama:"test"`
	NDepth      int     `json:"n_depth" llama:"test"`
	TestTime    string  `json:"test_time" llama:"test"` // RFC 3339, UTC, as llama-bench's
	AvgNs       int64   `json:"avg_ns" llama:"test"`
	StddevNs    int64   `json:"stddev_ns" llama:"test"`
	AvgTS       float64 `json:"avg_ts" llama:"test"`
	StddevTS    float64 `json:"stddev_ts" llama:"test"`

	AppVersion   string    `json:"app_version"`
	Engine       string    `json:"engine"`
	OS           string    `json:"os"`
	Cores        int       `json:"cores"`
	RAMBytes     int64     `json:"ram_bytes"`
	ModelSHA256  string    `json:"model_sha256"`
	PrefillChunk int       `json:"prefill_chunk"`
	Cache        string    `json:"cache"`
	KVDType      string    `json:"kv_dtype"`
	KVCapacity   int       `json:"kv_capacity"`
	KVWindows    string    `json:"kv_windows"`
	Test         string    `json:"test"`
	Numerics     string    `json:"numerics"` // the CPU engine's numerics mode: exact or fast
	Reps         int       `json:"n_reps"`
	Warmup       bool      `json:"warmup"`
	Seed         uint64    `json:"seed"`
	TTFTMs       float64   `json:"avg_ttft_ms"`
	LoadMs       float64   `json:"model_load_ms"`
	PeakBytes    int64     `json:"peak_bytes"`
	KVBytes      int64     `json:"kv_bytes"`
	SamplesNs    []int64   `json:"samples_ns"`
	SamplesTS    []float64 `json:"samples_ts"`
	RunID        int64     `json:"run_id"`
	Batch        string    `json:"batch"`
	// Stats are the repetitions with ExecuTorch's runner stats; only the
	// json and jsonl formats carry them (flat:"-").
	Stats []Rep `json:"stats" flat:"-"`
}

// RecordOf flattens a result.
func RecordOf(r *Result) Record {
	kv := ggmlType(r.Test.Cache)
	rec := Record{
		BuildCommit: cmp.Or(r.BuildCommit, r.AppVersion), CPUInfo: r.Machine.CPU, GPUInfo: r.Machine.GPU, Backends: r.Backends,
		ModelFile: r.Model.Name, ModelType: r.Model.Kind, ModelSize: r.Model.Size, ModelParams: r.Model.Params,
		NBatch: r.Model.Chunk, NUBatch: r.Model.Chunk, NThreads: r.Threads,
		CPUMask: "0x0", TypeK: kv, TypeV: kv, NGPULayers: gpuLayers(r.Device), SplitMode: "none", TensorSplit: "0.00",
		UseMmap: true,
		NPrompt: r.Test.NPrompt, NGen: r.Test.NGen, NDepth: r.Test.NDepth, TestTime: r.TestTime.UTC().Format(time.RFC3339),
		AvgNs: int64(r.AvgNs()), StddevNs: int64(r.StddevNs()), AvgTS: r.AvgTS(), StddevTS: r.StddevTS(),

		AppVersion: r.AppVersion, Engine: r.Engine, OS: r.Machine.OS, Cores: r.Machine.Cores, RAMBytes: r.Machine.RAMBytes,
		ModelSHA256: r.Model.SHA256, PrefillChunk: r.Model.Chunk,
		Cache: r.Test.Cache.String(), KVDType: r.Test.Cache.DType, KVCapacity: r.Test.Cache.Capacity, KVWindows: r.Test.Cache.Windows,
		Test: r.Test.Name(), Numerics: r.Test.NumericsName(), Reps: len(r.Reps), Warmup: r.Warmup, Seed: r.Seed,
		TTFTMs: r.AvgTTFTMs(), LoadMs: float64(r.LoadNs) / 1e6, PeakBytes: r.PeakMem(),
		SamplesNs: make([]int64, len(r.Reps)), SamplesTS: r.SamplesTS(), RunID: r.RunID, Batch: r.Batch,
		Stats: r.Reps,
	}
	for i, p := range r.Reps {
		rec.SamplesNs[i] = p.Ns
		rec.KVBytes = max(rec.KVBytes, p.KVBytes)
	}
	return rec
}

// ggmlType is a cache's KV dtype as llama-bench's type_k/type_v name
// ggml's types ("in-graph" for a cache inside the graph).
func ggmlType(c Cache) string {
	switch {
	case c.InGraph:
		return "in-graph"
	case c.DType == "fp32":
		return "f32"
	case c.DType == "fp16":
		return "f16"
	}
	return c.DType
}

// gpuLayers is llama-bench's n_gpu_layers for the device an engine ran
// on: all the layers (llama-bench's 99) on a GPU, none on the CPU.
func gpuLayers(device string) int {
	if device == "" || device == "cpu" {
		return 0
	}
	return 99
}

// Columns are the Record's flat column names (csv, sql), in order.
func Columns() []string {
	var out []string
	for _, f := range flatFields() {
		out = append(out, jsonName(f))
	}
	return out
}

// flatFields are the Record's fields that csv and sql carry.
func flatFields() []reflect.StructField {
	t := reflect.TypeFor[Record]()
	var out []reflect.StructField
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("flat") != "-" {
			out = append(out, f)
		}
	}
	return out
}

func jsonName(f reflect.StructField) string {
	n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return n
}

// values are a record's flat cells as Go values (slices joined by commas).
func (rec Record) values() []any {
	v := reflect.ValueOf(rec)
	fields := flatFields()
	out := make([]any, len(fields))
	for i, sf := range fields {
		out[i] = flatValue(v.FieldByIndex(sf.Index))
	}
	return out
}

// flatValue is a field as one cell's Go value: a slice joined by commas.
func flatValue(f reflect.Value) any {
	if f.Kind() != reflect.Slice {
		return f.Interface()
	}
	parts := make([]string, f.Len())
	for j := range parts {
		parts[j] = fmt.Sprint(f.Index(j).Interface())
	}
	return strings.Join(parts, ",")
}

func cellText(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// Write writes results in a format (md, csv, json, jsonl, sql).
func Write(w io.Writer, format string, results []*Result) error {
	recs := make([]Record, len(results))
	for i, r := range results {
		recs[i] = RecordOf(r)
	}
	switch format {
	case "md":
		return writeMarkdown(w, results)
	case "csv":
		cw := csv.NewWriter(w)
		if err := cw.Write(Columns()); err != nil {
			return err
		}
		for _, rec := range recs {
			vals := rec.values()
			row := make([]string, len(vals))
			for i, v := range vals {
				row[i] = cellText(v)
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	case "json":
		b, err := json.MarshalIndent(recs, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "jsonl":
		enc := json.NewEncoder(w)
		for _, rec := range recs {
			if err := enc.Encode(rec); err != nil {
				return err
			}
		}
		return nil
	case "sql":
		return writeSQL(w, recs)
	}
	return fmt.Errorf("unknown output format %q (%s)", format, strings.Join(Formats, "|"))
}

// SQLTable is the table of the sql format that holds every flat column;
// LlamaBenchTable, llama-bench's own, holds its columns.
const (
	SQLTable        = "etchat_bench"
	LlamaBenchTable = "test"
)

// writeSQL writes llama-bench's `test` table and etchat's etchat_bench,
// one row per result in each (build_commit, test_time, n_prompt, n_gen
// and n_depth join them).
func writeSQL(w io.Writer, recs []Record) error {
	all := flatFields()
	var llama []reflect.StructField
	for _, f := range all {
		if f.Tag.Get("llama") == "test" {
			llama = append(llama, f)
		}
	}
	var b strings.Builder
	createTable(&b, LlamaBenchTable, llama)
	createTable(&b, SQLTable, all)
	for _, rec := range recs {
		v := reflect.ValueOf(rec)
		insertRow(&b, LlamaBenchTable, llama, v)
		insertRow(&b, SQLTable, all, v)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// createTable declares fields as columns typed as llama-bench's sql
// printer types them: INTEGER for ints and bools, REAL, else TEXT.
func createTable(b *strings.Builder, table string, fields []reflect.StructField) {
	fmt.Fprintf(b, "CREATE TABLE IF NOT EXISTS %s (\n", table)
	for i, f := range fields {
		typ := "TEXT"
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Bool:
			typ = "INTEGER"
		case reflect.Float64:
			typ = "REAL"
		}
		sep := ","
		if i == len(fields)-1 {
			sep = ""
		}
		fmt.Fprintf(b, "  %s %s%s\n", jsonName(f), typ, sep)
	}
	b.WriteString(");\n")
}

func insertRow(b *strings.Builder, table string, fields []reflect.StructField, rec reflect.Value) {
	cols := make([]string, len(fields))
	cells := make([]string, len(fields))
	for i, f := range fields {
		cols[i] = jsonName(f)
		cells[i] = sqlValue(flatValue(rec.FieldByIndex(f.Index)))
	}
	fmt.Fprintf(b, "INSERT INTO %s (%s) VALUES (%s);\n", table, strings.Join(cols, ", "), strings.Join(cells, ", "))
}

func sqlValue(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	return cellText(v)
}

// MarkdownHeader is the markdown table's header.
var MarkdownHeader = []string{"model", "size", "params", "backend", "engine", "cache", "test", "t/s", "ttft ms", "peak mem"}

// MarkdownRow is one result's markdown cells.
func MarkdownRow(r *Result) []string {
	return []string{
		r.Model.Name, MiB(r.Model.Size), Params(r.Model.Params), r.Backends, engineCell(r), r.Test.Cache.String(), r.Test.Name(),
		fmt.Sprintf("%.2f ± %.2f", r.AvgTS(), r.StddevTS()), fmt.Sprintf("%.2f", r.AvgTTFTMs()), MiB(r.PeakMem()),
	}
}

// engineCell is the engine, with "fast" after it for the fast numerics
// mode (exact, the reference, is not written).
func engineCell(r *Result) string {
	if r.Test.IsFast() {
		return r.Engine + " fast"
	}
	return r.Engine
}

func writeMarkdown(w io.Writer, results []*Result) error {
	rows := [][]string{MarkdownHeader}
	for _, r := range results {
		rows = append(rows, MarkdownRow(r))
	}
	return WriteTable(w, rows, []bool{false, true, true, false, false, false, true, true, true, true})
}

// WriteTable writes a markdown table with padded columns; right[i] aligns
// column i to the right.
func WriteTable(w io.Writer, rows [][]string, right []bool) error {
	if len(rows) == 0 {
		return nil
	}
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], len([]rune(c)), 3)
			}
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i := range width {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i < len(right) && right[i] {
				b.WriteString(" " + pad + c + " |")
			} else {
				b.WriteString(" " + c + pad + " |")
			}
		}
		b.WriteString("\n")
	}
	line(rows[0])
	b.WriteString("|")
	for i, n := range width {
		if i < len(right) && right[i] {
			b.WriteString(" " + strings.Repeat("-", n-1) + ": |")
		} else {
			b.WriteString(" " + strings.Repeat("-", n) + " |")
		}
	}
	b.WriteString("\n")
	for _, r := range rows[1:] {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// MiB formats bytes as llama-bench's size column ("62.00 MiB"); "" when 0.
func MiB(n int64) string {
	if n <= 0 {
		return ""
	}
	if n >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
}

// Params formats a parameter count as llama-bench does ("32.51 M").
func Params(n int64) string {
	switch {
	case n <= 0:
		return ""
	case n >= 1e9:
		return fmt.Sprintf("%.2f B", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f M", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f K", float64(n)/1e3)
}
