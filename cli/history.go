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

// historyOpts are etchat history's flags.
type historyOpts struct {
	db, model, kind, format  string
	exportConv, importFile   string
	asJSON, runs, exportRuns bool
	check                    bool
	limit                    int
	convIDs                  []int64 // --export-conversation ID; nil for all
}

// runHistory lists, exports and imports stored conversations and runs.
func runHistory(ctx context.Context, env *Env, args []string) error {
	o, err := parseHistoryFlags(env, args)
	if err != nil {
		return err
	}
	path := o.db
	if path == "" {
		if path, err = store.DefaultPath(env.Getenv); err != nil {
			return err
		}
	}
	// Reading commands never create a database where there is none.
	if o.importFile == "" {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return o.noDatabase(env.Stdout, path)
		}
	}
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		return storeError(err)
	}
	defer db.Close()
	if err := o.run(ctx, env, db); err != nil {
		return storeError(err)
	}
	return nil
}

// parseHistoryFlags reads etchat history's flags and checks that they
// make one command.
func parseHistoryFlags(env *Env, args []string) (*historyOpts, error) {
	fs := newFlags(env, "history", historySynopsis)
	o := &historyOpts{}
	fs.StringVar(&o.db, "db", "", "database file (default $"+store.EnvVar+", else the user config folder's etchat/etchat.db)")
	fs.BoolVar(&o.asJSON, "json", false, "print JSON instead of a table")
	fs.BoolVar(&o.runs, "runs", false, "list runs (chat, benchmark and server-request measurements) instead of conversations")
	fs.StringVar(&o.model, "model", "", "only this model: a sha256 prefix or a model name")
	fs.StringVar(&o.kind, "kind", "", "with --runs or --export-runs: only chat, bench or api (etchat serve) runs")
	fs.IntVar(&o.limit, "limit", 50, "list at most N, newest first (0: all)")
	fs.StringVar(&o.exportConv, "export-conversation", "", "write conversation ID (or all) to stdout")
	fs.BoolVar(&o.exportRuns, "export-runs", false, "write runs to stdout")
	fs.StringVar(&o.format, "format", "", "export format: json or md for conversations (default json), csv or json for runs (default csv)")
	fs.StringVar(&o.importFile, "import", "", "import conversations from an etchat JSON export (- for stdin)")
	fs.BoolVar(&o.check, "check", false, "check the database file for damage (SQLite integrity_check)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, Usagef("unexpected argument %q", fs.Arg(0))
	}
	if o.limit < 0 {
		return nil, Usagef("invalid value %d for flag -limit: must be 0 or more", o.limit)
	}
	if o.kind != "" && !store.KnownRunKind(o.kind) {
		return nil, Usagef("invalid value %q for flag -kind: want %s", o.kind, strings.Join(store.RunKinds, " or "))
	}
	if err := o.checkModes(); err != nil {
		return nil, err
	}
	if err := o.checkFormat(); err != nil {
		return nil, err
	}
	if o.exportConv != "" && o.exportConv != "all" {
		id, err := strconv.ParseInt(o.exportConv, 10, 64)
		if err != nil || id <= 0 {
			return nil, Usagef("invalid value %q for flag -export-conversation: want a conversation id (see 'etchat history') or all", o.exportConv)
		}
		o.convIDs = []int64{id}
	}
	return o, nil
}

// checkModes refuses two commands at once.
func (o *historyOpts) checkModes() error {
	modes := 0
	for _, on := range []bool{o.exportConv != "", o.exportRuns, o.importFile != "", o.check} {
		if on {
			modes++
		}
	}
	if modes > 1 || (modes == 1 && o.runs) {
		return Usagef("use one of --runs, --export-conversation, --export-runs, --import, --check at a time")
	}
	return nil
}

// checkFormat gives --format its export's default and refuses a format
// that export does not write, or one without an export.
func (o *historyOpts) checkFormat() error {
	switch {
	case o.exportConv != "":
		if o.format == "" {
			o.format = "json"
		}
		if o.format != "json" && o.format != "md" {
			return Usagef("invalid value %q for flag -format: conversations export as json or md", o.format)
		}
	case o.exportRuns:
		if o.format == "" {
			o.format = "csv"
		}
		if o.format != "csv" && o.format != "json" {
			return Usagef("invalid value %q for flag -format: runs export as csv or json", o.format)
		}
	case o.format != "":
		return Usagef("flag -format goes with --export-conversation or --export-runs")
	}
	return nil
}

// noDatabase answers a reading command when there is no database at path:
// empty output for a machine, a sentence for a person; asking for one
// conversation is an error.
func (o *historyOpts) noDatabase(w io.Writer, path string) error {
	if !o.asJSON && o.exportConv == "" && !o.exportRuns {
		fmt.Fprintf(w, "No history yet: there is no database at %s.\n", path)
		return nil
	}
	if o.convIDs != nil {
		return fmt.Errorf("no database at %s, so no conversation %d", path, o.convIDs[0])
	}
	return emptyOutput(w, o.asJSON || o.format == "json", o.exportRuns && o.format == "csv")
}

// run is the command the flags chose, on db.
func (o *historyOpts) run(ctx context.Context, env *Env, db *store.DB) error {
	filter := store.RunFilter{Model: o.model, Kind: o.kind, Limit: o.limit}
	switch {
	case o.check:
		return historyCheck(ctx, env.Stdout, db)
	case o.importFile != "":
		return historyImport(ctx, env, db, o.importFile)
	case o.exportConv != "" && o.format == "md":
		return db.ExportMarkdown(ctx, env.Stdout, o.convIDs...)
	case o.exportConv != "":
		return db.ExportJSON(ctx, env.Stdout, o.convIDs...)
	case o.exportRuns:
		filter.Limit = 0
		return exportRuns(ctx, env.Stdout, db, filter, o.format)
	case o.runs:
		return listRuns(ctx, env.Stdout, db, filter, o.asJSON)
	}
	return listConversations(ctx, env.Stdout, db, o.model, o.limit, o.asJSON)
}

// historyCheck is --check: SQLite's integrity check, and the schema
// version when the file is sound.
func historyCheck(ctx context.Context, w io.Writer, db *store.DB) error {
	if err := db.IntegrityCheck(ctx); err != nil {
		return err
	}
	v, _ := db.Version(ctx)
	fmt.Fprintf(w, "ok: %s (schema version %d)\n", db.File(), v)
	return nil
}

// exportRuns is --export-runs in format (csv or json).
func exportRuns(ctx context.Context, w io.Writer, db *store.DB, f store.RunFilter, format string) error {
	if format == "json" {
		return db.ExportRunsJSON(ctx, w, f)
	}
	rs, err := db.ListRuns(ctx, f)
	if err != nil {
		return err
	}
	return store.WriteRunsCSV(w, rs)
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
		case store.RunQuality:
			test = qualityTest(r.Quality)
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

// qualityTest sums up a quality run: "PPL 12.3 ± 0.4", and against a base
// "…, KLD 0.0123, same top 97.5%".
func qualityTest(q store.Quality) string {
	s := fmt.Sprintf("PPL %.4g ± %.2g", q.PPL, q.PPLErr)
	if q.BaseSHA256 != "" {
		s += fmt.Sprintf(", KLD %.4g, same top %.1f%%", q.KLDMean, q.SameTopPct)
	}
	return s
}
