package quality

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Formats are the output formats Write accepts (bench's, but sql).
var Formats = []string{"md", "csv", "json", "jsonl"}

// Write writes results in format: md (tables), csv (one row each, a
// header first), json (an array) or jsonl (an object a line).
func Write(w io.Writer, format string, rs []*Result) error {
	switch format {
	case "md":
		return writeMD(w, rs)
	case "csv":
		return writeCSV(w, rs)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rs)
	case "jsonl":
		enc := json.NewEncoder(w)
		for _, r := range rs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(Formats, ", "))
}

func f4(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
func f6(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }

func writeMD(w io.Writer, rs []*Result) error {
	b := &strings.Builder{}
	b.WriteString("| model | engine | ctx | windows | scored | PPL | tok/s | s |\n|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rs {
		eng := r.Engine
		if r.Mode != "" {
			eng += " " + r.Mode
		}
		if r.Stepwise {
			eng += " (step by step)"
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %d | %s ± %s | %.1f | %.1f |\n", r.Model, eng, r.Ctx, r.Windows, r.Scored,
			f4(r.PPL), f4(r.PPLErr), r.TokS, r.Seconds)
	}
	var kl []*Result
	for _, r := range rs {
		if r.KLD != nil {
			kl = append(kl, r)
		}
	}
	if len(kl) > 0 {
		b.WriteString("\n| model | base | base PPL | ln(PPL/base) | mean KLD | median | 99% | max | same top | Δp RMS |\n" +
			"|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range kl {
			k := r.KLD
			base := k.Base.Model + " (" + k.Base.Engine
			if k.Base.TopK > 0 {
				base += fmt.Sprintf(", top %d", k.Base.TopK)
			}
			base += ")"
			fmt.Fprintf(b, "| %s | %s | %s ± %s | %s ± %s | %s ± %s | %s | %s | %s | %.2f ± %.2f %% | %.3f ± %.3f %% |\n", r.Model, base,
				f4(k.BasePPL), f4(k.BasePPLErr), f6(k.LnRatio), f6(k.LnRatioErr), f6(k.Mean), f6(k.MeanErr), f6(k.Median),
				f6(k.P99), f6(k.Max), k.SameTop, k.SameTopErr, k.DeltaPRMS, k.DeltaPRMSErr)
		}
	}
	for _, r := range rs {
		b.WriteString(notes(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// notes are the lines under the tables: what was scored and how.
func notes(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s: %s; %d tokens (%d windows of %d, scored from position %d: %s)\n", r.Model, r.Text, r.Tokens,
		r.Windows, r.Ctx, r.First, "the second half of each window, as llama-perplexity scores")
	if r.Stepwise {
		fmt.Fprintf(&b, "%s: scored one token per step: %s\n", r.Model, r.StepwiseWhy)
	}
	if r.KLD != nil && r.KLD.Base.TopK > 0 {
		fmt.Fprintf(&b, "%s: the base kept the top %d tokens of each row: the KLD counts the rest as one outcome, a lower bound of the full KLD\n",
			r.Model, r.KLD.Base.TopK)
	}
	if r.KLD != nil && !r.KLD.Base.SameTokenizer {
		fmt.Fprintf(&b, "%s: the tokenizers were not matched by file (one or both have none, or the files differ); the vocabulary sizes and every id scored are equal\n", r.Model)
	}
	if r.Stopped {
		fmt.Fprintf(&b, "%s: stopped: the figures cover the %d tokens scored\n", r.Model, r.Scored)
	}
	return b.String()
}

var csvHeader = []string{"model", "model_sha256", "engine", "device", "mode", "stepwise", "text", "ctx", "windows", "tokens", "scored",
	"ppl", "ppl_err", "seconds", "tok_s", "base_model", "base_engine", "base_top_k", "base_ppl", "kld_mean", "kld_mean_err",
	"kld_median", "kld_p99", "kld_max", "same_top_pct", "same_top_pct_err", "delta_p_rms_pct"}

func writeCSV(w io.Writer, rs []*Result) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, r := range rs {
		row := []string{r.Model, r.ModelSHA256, r.Engine, r.Device, r.Mode, strconv.FormatBool(r.Stepwise), r.Text,
			strconv.Itoa(r.Ctx), strconv.Itoa(r.Windows), strconv.Itoa(r.Tokens), strconv.Itoa(r.Scored),
			g(r.PPL), g(r.PPLErr), g(r.Seconds), g(r.TokS)}
		if k := r.KLD; k != nil {
			row = append(row, k.Base.Model, k.Base.Engine, strconv.Itoa(k.Base.TopK), g(k.BasePPL), g(k.Mean), g(k.MeanErr),
				g(k.Median), g(k.P99), g(k.Max), g(k.SameTop), g(k.SameTopErr), g(k.DeltaPRMS))
		} else {
			row = append(row, make([]string, len(csvHeader)-len(row))...)
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}
