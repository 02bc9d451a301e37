package bench

import (
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

// Record is one result as a flat row, with llama-bench's column names
// where it has them (cpu_info, gpu_info, backends, model_filename,
// model_size, model_n_params, n_prompt, n_gen, n_depth, test_time, avg_ns,
// stddev_ns, avg_ts, stddev_ts, samples_ns, samples_ts) and etchat's own
// (engine, model_sha256, the cache, app_version, TTFT, memory, machine).
type Record struct {
	AppVersion   string    `json:"app_version"`
	CPUInfo      string    `json:"cpu_info"`
	GPUInfo      string    `json:"gpu_info"`
	Backends     string    `json:"backends"`
	Engine       string    `json:"engine"`
	OS           string    `json:"os"`
	Cores        int       `json:"cores"`
	RAMBytes     int64     `json:"ram_bytes"`
	ModelFile    string    `json:"model_filename"`
	ModelSHA256  string    `json:"model_sha256"`
	ModelType    string    `json:"model_type"`
	ModelSize    int64     `json:"model_size"`
	ModelParams  int64     `json:"model_n_params"`
	PrefillChunk int       `json:"prefill_chunk"`
	Cache        string    `json:"cache"`
	KVDType      string    `json:"kv_dtype"`
	KVCapacity   int       `json:"kv_capacity"`
	KVWindows    string    `json:"kv_windows"`
	NPrompt      int       `json:"n_prompt"`
	NGen         int       `json:"n_gen"`
	NDepth       int       `json:"n_depth"`
	Test         string    `json:"test"`
	Reps         int       `json:"n_reps"`
	Warmup       bool      `json:"warmup"`
	Seed         uint64    `json:"seed"`
	TestTime     string    `json:"test_time"` // RFC 3339, UTC
	AvgNs        int64     `json:"avg_ns"`
	StddevNs     int64     `json:"stddev_ns"`
	AvgTS        float64   `json:"avg_ts"`
	StddevTS     float64   `json:"stddev_ts"`
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
	rec := Record{
		AppVersion: r.AppVersion, CPUInfo: r.Machine.CPU, GPUInfo: r.Machine.GPU, Backends: r.Backends, Engine: r.Engine,
		OS: r.Machine.OS, Cores: r.Machine.Cores, RAMBytes: r.Machine.RAMBytes,
		ModelFile: r.Model.Name, ModelSHA256: r.Model.SHA256, ModelType: r.Model.Kind, ModelSize: r.Model.Size,
		ModelParams: r.Model.Params, PrefillChunk: r.Model.Chunk,
		Cache: r.Test.Cache.String(), KVDType: r.Test.Cache.DType, KVCapacity: r.Test.Cache.Capacity, KVWindows: r.Test.Cache.Windows,
		NPrompt: r.Test.NPrompt, NGen: r.Test.NGen, NDepth: r.Test.NDepth, Test: r.Test.Name(),
		Reps: len(r.Reps), Warmup: r.Warmup, Seed: r.Seed, TestTime: r.TestTime.UTC().Format(time.RFC3339),
		AvgNs: int64(r.AvgNs()), StddevNs: int64(r.StddevNs()), AvgTS: r.AvgTS(), StddevTS: r.StddevTS(),
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
		f := v.FieldByIndex(sf.Index)
		switch f.Kind() {
		case reflect.Slice:
			parts := make([]string, f.Len())
			for j := range parts {
				parts[j] = fmt.Sprint(f.Index(j).Interface())
			}
			out[i] = strings.Join(parts, ",")
		default:
			out[i] = f.Interface()
		}
	}
	return out
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

// SQLTable is the table the sql format creates.
const SQLTable = "etchat_bench"

func writeSQL(w io.Writer, recs []Record) error {
	fields := flatFields()
	cols := Columns()
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", SQLTable)
	for i, c := range cols {
		typ := "TEXT"
		switch fields[i].Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Bool:
			typ = "INTEGER"
		case reflect.Float64:
			typ = "REAL"
		}
		sep := ","
		if i == len(cols)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  %s %s%s\n", c, typ, sep)
	}
	b.WriteString(");\n")
	for _, rec := range recs {
		vals := rec.values()
		cells := make([]string, len(vals))
		for i, v := range vals {
			switch x := v.(type) {
			case string:
				cells[i] = "'" + strings.ReplaceAll(x, "'", "''") + "'"
			case bool:
				cells[i] = "0"
				if x {
					cells[i] = "1"
				}
			default:
				cells[i] = cellText(v)
			}
		}
		fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES (%s);\n", SQLTable, strings.Join(cols, ", "), strings.Join(cells, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// MarkdownHeader is the markdown table's header.
var MarkdownHeader = []string{"model", "size", "params", "backend", "engine", "cache", "test", "t/s", "ttft ms", "peak mem"}

// MarkdownRow is one result's markdown cells.
func MarkdownRow(r *Result) []string {
	return []string{
		r.Model.Name, MiB(r.Model.Size), Params(r.Model.Params), r.Backends, r.Engine, r.Test.Cache.String(), r.Test.Name(),
		fmt.Sprintf("%.2f ± %.2f", r.AvgTS(), r.StddevTS()), fmt.Sprintf("%.2f", r.AvgTTFTMs()), MiB(r.PeakMem()),
	}
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
