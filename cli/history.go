package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"etchat/store"
)

const historySynopsis = `[--db PATH] [--json] [--runs [--kind chat|bench|api]] [--model SHA|NAME] [--limit N]
       etchat history --export-conversation ID|all [--format json|md]
       etchat history --export-runs [--format csv|json] [--model SHA|NAME] [--kind chat|bench|api]
       etchat history --import FILE
       etchat history --check`

// runHistory lists, exports and imports stored conversations and runs.
func runHistory(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "history", historySynopsis)
	dbPath := fs.String("db", "", "database file (default $"+store.EnvVar+", else the user config folder's etchat/etchat.db)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	runs := fs.Bool("runs", false, "list runs (chat, benchmark and server-request measurements) instead of conversations")
	model := fs.String("model", "", "only this model: a sha256 prefix or a model name")
	kind := fs.String("kind", "", "with --runs or --export-runs: only chat, bench or api (etchat serve) runs")
	limit := fs.Int("limit", 50, "list at most N, newest first (0: all)")
	exportConv := fs.String("export-conversation", "", "write conversation ID (or all) to stdout")
	exportRuns := fs.Bool("export-runs", false, "write runs to stdout")
	format := fs.String("format", "", "export format: json or md for conversations (default json), csv or json for runs (default csv)")
	importFile := fs.String("import", "", "import conversations from an etchat JSON export (- for stdin)")
	check := fs.Bool("check", false, "check the database file for damage (SQLite integrity_check)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q", fs.Arg(0))
	}
	if *limit < 0 {
		return Usagef("invalid value %d for flag -limit: must be 0 or more", *limit)
	}
	if *kind != "" && !store.KnownRunKind(*kind) {
		return Usagef("invalid value %q for flag -kind: want %s", *kind, strings.Join(store.RunKinds, " or "))
	}
	modes := 0
	for _, on := range []bool{*exportConv != "", *exportRuns, *importFile != "", *check} {
		if on {
			modes++
		}
	}
	if modes > 1 || (modes == 1 && *runs) {
		return Usagef("use one of --runs, --export-conversation, --export-runs, --import, --check at a time")
	}
	switch {
	case *exportConv != "":
		if *format == "" {
			*format = "json"
		}
		if *format != "json" && *format != "md" {
			return Usagef("invalid value %q for flag -format: conversations export as json or md", *format)
		}
	case *exportRuns:
		if *format == "" {
			*format = "csv"
		}
		if *format != "csv" && *format != "json" {
			return Usagef("invalid value %q for flag -format: runs export as csv or json", *format)
		}
	case *format != "":
		return Usagef("flag -format goes with --export-conversation or --export-runs")
	}
	var convIDs []int64
	if *exportConv != "" && *exportConv != "all" {
		id, err := strconv.ParseInt(*exportConv, 10, 64)
		if err != nil || id <= 0 {
			return Usagef("invalid value %q for flag -export-conversation: want a conversation id (see 'etchat history') or all", *exportConv)
		}
		convIDs = []int64{id}
	}

	path := *dbPath
	if path == "" {
		p, err := store.DefaultPath(env.Getenv)
		if err != nil {
			return err
		}
		path = p
	}
	// Reading commands never create a database where there is none.
	if *importFile == "" {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if *asJSON || *exportConv != "" || *exportRuns {
				if *exportConv != "" && convIDs != nil {
					return fmt.Errorf("no database at %s, so no conversation %d", path, convIDs[0])
				}
				return emptyOutput(env.Stdout, *asJSON || *format == "json", *exportRuns && *format == "csv")
			}
			fmt.Fprintf(env.Stdout, "No history yet: there is no database at %s.\n", path)
			return nil
		}
	}
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		return storeError(err)
	}
	defer db.Close()
	filter := store.RunFilter{Model: *model, Kind: *kind, Limit: *limit}

	switch {
	case *check:
		if err = db.IntegrityCheck(ctx); err == nil {
			v, _ := db.Version(ctx)
			fmt.Fprintf(env.Stdout, "ok: %s (schema version %d)\n", db.File(), v)
		}
	case *importFile != "":
		err = historyImport(ctx, env, db, *importFile)
	case *exportConv != "":
		if *format == "md" {
			err = db.ExportMarkdown(ctx, env.Stdout, convIDs...)
		} else {
			err = db.ExportJSON(ctx, env.Stdout, convIDs...)
		}
	case *exportRuns:
		filter.Limit = 0
		if *format == "json" {
			err = db.ExportRunsJSON(ctx, env.Stdout, filter)
		} else {
			var rs []store.Run
			if rs, err = db.ListRuns(ctx, filter); err == nil {
				err = store.WriteRunsCSV(env.Stdout, rs)
			}
		}
	case *runs:
		err = listRuns(ctx, env.Stdout, db, filter, *asJSON)
	default:
		err = listConversations(ctx, env.Stdout, db, *model, *limit, *asJSON)
	}
	if err != nil {
		return storeError(err)
	}
	return nil
}

func emptyOutput(w io.Writer, asJSON, csvHeader bool) error {
	switch {
	case csvHeader:
		return store.WriteRunsCSV(w, nil)
	case asJSON:
		_, err := fmt.Fprintln(w, "[]")
		return err
	}
	return nil
}

func historyImport(ctx context.Context, env *Env, db *store.DB, file string) error {
	var r io.Reader = env.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	convs, err := db.ImportJSON(ctx, r)
	if err != nil {
		return fmt.Errorf("import %s: %w", file, err)
	}
	for _, c := range convs {
		fmt.Fprintf(env.Stdout, "imported conversation %d: %s (%d messages)\n", c.ID, titleOf(c), c.Messages)
	}
	return nil
}

func titleOf(c store.Conversation) string {
	if c.Title == "" {
		return "(untitled)"
	}
	return c.Title
}

// matchesModel: a sha256 prefix or a model name (case-insensitive).
func matchesModel(q, sha, name string) bool {
	return q == "" || strings.HasPrefix(sha, strings.ToLower(q)) || strings.EqualFold(name, q)
}

func listConversations(ctx context.Context, w io.Writer, db *store.DB, model string, limit int, asJSON bool) error {
	all, err := db.ListConversations(ctx, 0)
	if err != nil {
		return err
	}
	convs := []store.Conversation{}
	for _, c := range all {
		if matchesModel(model, c.ModelSHA256, c.ModelName) {
			convs = append(convs, c)
		}
		if limit > 0 && len(convs) == limit {
			break
		}
	}
	if asJSON {
		return writeJSON(w, convs)
	}
	if len(convs) == 0 {
		_, err := fmt.Fprintln(w, "No conversations.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tMESSAGES\tMODEL\tTITLE")
	for _, c := range convs {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", c.ID, c.Updated.Local().Format("2006-01-02 15:04"), c.Messages, dash(c.ModelName), titleOf(c))
	}
	return tw.Flush()
}

func listRuns(ctx context.Context, w io.Writer, db *store.DB, f store.RunFilter, asJSON bool) error {
	rs, err := db.ListRuns(ctx, f)
	if err != nil {
		return err
	}
	if asJSON {
		if rs == nil {
			rs = []store.Run{}
		}
		return writeJSON(w, rs)
	}
	if len(rs) == 0 {
		_, err := fmt.Fprintln(w, "No runs.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tKIND\tMODEL\tENGINE\tTEST\tPREFILL t/s\tDECODE t/s\tTTFT ms\tt/s")
	for _, r := range rs {
		test, ts := "-", "-"
		switch r.Kind {
		case store.RunBench:
			test = benchName(r.Bench)
			ts = fmt.Sprintf("%.2f ± %.2f", r.Bench.AvgTokS, r.Bench.StddevTokS)
		case store.RunAPI:
			test = apiTest(r)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.0f\t%s\n", r.ID, r.Started.Local().Format("2006-01-02 15:04"), r.Kind,
			dash(modelLabel(r)), dash(engineLabel(r)), test, r.PrefillTokS, r.DecodeTokS, r.TTFTMs, ts)
	}
	return tw.Flush()
}

// apiTest names a server request: its endpoint and the prompt tokens it
// found cached ("chat/completions, 22 cached").
func apiTest(r store.Run) string {
	var c struct {
		Endpoint string `json:"endpoint"`
		Cached   int    `json:"cached_tokens"`
	}
	if json.Unmarshal(r.Config, &c) != nil || c.Endpoint == "" {
		return "-"
	}
	return fmt.Sprintf("%s, %d cached", strings.TrimPrefix(c.Endpoint, "/v1/"), c.Cached)
}

// engineLabel is the run's engine, with the device it computed on when
// the run recorded one that the name does not say ("mlx on metal").
func engineLabel(r store.Run) string {
	var c struct {
		Device string `json:"device"`
	}
	if json.Unmarshal(r.Config, &c) != nil || c.Device == "" || c.Device == r.Engine {
		return r.Engine
	}
	return r.Engine + " on " + c.Device
}

// benchName is llama-bench's test name: pp512, tg128, pp512+tg128, @ d4096.
func benchName(b store.BenchTest) string {
	var parts []string
	if b.NPrompt > 0 {
		parts = append(parts, fmt.Sprintf("pp%d", b.NPrompt))
	}
	if b.NGen > 0 {
		parts = append(parts, fmt.Sprintf("tg%d", b.NGen))
	}
	s := strings.Join(parts, "+")
	if s == "" {
		s = "-"
	}
	if b.NDepth > 0 {
		s += fmt.Sprintf(" @ d%d", b.NDepth)
	}
	return s
}

func modelLabel(r store.Run) string {
	if r.ModelName != "" {
		return r.ModelName
	}
	if len(r.ModelSHA256) > 12 {
		return r.ModelSHA256[:12]
	}
	return r.ModelSHA256
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
