package store

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ExportFormat and ExportVersion identify etchat's conversation export.
const (
	ExportFormat  = "etchat-conversations"
	ExportVersion = 1
)

// ExportFile is the JSON document ExportJSON writes and ImportJSON reads:
// lossless, with every branch of every tree and the token ids.
type ExportFile struct {
	Format        string               `json:"format"`
	Version       int                  `json:"version"`
	Conversations []ExportConversation `json:"conversations"`
}

// ExportConversation is one conversation in an export. Message ids are
// local to the file (1, 2, … in creation order); CurrentLeaf is one of them,
// or 0.
type ExportConversation struct {
	UID         string          `json:"uid"`
	Title       string          `json:"title"`
	ModelSHA256 string          `json:"model_sha256,omitempty"`
	ModelName   string          `json:"model_name,omitempty"`
	Settings    json.RawMessage `json:"settings"`
	Created     time.Time       `json:"created"`
	Updated     time.Time       `json:"updated"`
	CurrentLeaf int64           `json:"current_leaf"`
	Messages    []ExportMessage `json:"messages"`
}

// ExportMessage is one message of an exported tree.
type ExportMessage struct {
	ID       int64           `json:"id"`
	Parent   int64           `json:"parent,omitempty"`
	Role     string          `json:"role"`
	Text     string          `json:"text"`
	TokenIDs []int32         `json:"token_ids,omitempty"`
	PosStart int             `json:"pos_start"`
	PosEnd   int             `json:"pos_end"`
	Stats    json.RawMessage `json:"stats,omitempty"`
	Partial  bool            `json:"partial,omitempty"`
	Created  time.Time       `json:"created"`
	Updated  time.Time       `json:"updated"`
}

// loadExport reads the conversations (all when ids is empty) in one
// snapshot.
func (db *DB) loadExport(ctx context.Context, ids []int64) (ExportFile, error) {
	out := ExportFile{Format: ExportFormat, Version: ExportVersion, Conversations: []ExportConversation{}}
	err := db.read(ctx, "export", func(tx *sql.Tx) error {
		if len(ids) == 0 {
			rows, err := tx.QueryContext(ctx, "SELECT id FROM conversations ORDER BY created_ms, id")
			if err != nil {
				return err
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		for _, id := range ids {
			c, err := scanConv(tx.QueryRowContext(ctx, "SELECT "+convCols+" FROM conversations c WHERE c.id = ?", id))
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("conversation", id)
			}
			if err != nil {
				return err
			}
			msgs, err := db.queryMsgs(ctx, tx, "export", "SELECT "+msgCols+" FROM messages WHERE conversation_id = ? ORDER BY id", id)
			if err != nil {
				return err
			}
			out.Conversations = append(out.Conversations, exportConv(c, msgs))
		}
		return nil
	})
	return out, err
}

func exportConv(c Conversation, msgs []Message) ExportConversation {
	local := make(map[int64]int64, len(msgs))
	ec := ExportConversation{UID: c.UID, Title: c.Title, ModelSHA256: c.ModelSHA256, ModelName: c.ModelName,
		Settings: c.Settings, Created: c.Created, Updated: c.Updated, Messages: make([]ExportMessage, 0, len(msgs))}
	for i, m := range msgs {
		local[m.ID] = int64(i + 1)
		ec.Messages = append(ec.Messages, ExportMessage{ID: int64(i + 1), Parent: local[m.ParentID], Role: m.Role, Text: m.Text,
			TokenIDs: m.TokenIDs, PosStart: m.PosStart, PosEnd: m.PosEnd, Stats: m.Stats, Partial: m.Partial,
			Created: m.Created, Updated: m.Updated})
	}
	ec.CurrentLeaf = local[c.CurrentLeaf]
	return ec
}

// ExportJSON writes the conversations with the given ids (all when none)
// as an ExportFile.
func (db *DB) ExportJSON(ctx context.Context, w io.Writer, ids ...int64) error {
	f, err := db.loadExport(ctx, ids)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}

// ExportMarkdown writes the conversations (all when no ids) for reading:
// the branch each continues from, with a note where other versions exist.
func (db *DB) ExportMarkdown(ctx context.Context, w io.Writer, ids ...int64) error {
	f, err := db.loadExport(ctx, ids)
	if err != nil {
		return err
	}
	var b strings.Builder
	for i, c := range f.Conversations {
		if i > 0 {
			b.WriteString("\n---\n\n")
		}
		title := c.Title
		if title == "" {
			title = "Untitled conversation"
		}
		fmt.Fprintf(&b, "# %s\n\n", title)
		if c.ModelName != "" || c.ModelSHA256 != "" {
			fmt.Fprintf(&b, "- Model: %s", c.ModelName)
			if c.ModelSHA256 != "" {
				fmt.Fprintf(&b, " (sha256 %s)", c.ModelSHA256)
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "- Started: %s\n- Updated: %s\n\n", c.Created.Format(time.RFC3339), c.Updated.Format(time.RFC3339))
		byID := make(map[int64]ExportMessage, len(c.Messages))
		kids := map[int64]int{}
		for _, m := range c.Messages {
			byID[m.ID] = m
			kids[m.Parent]++
		}
		var path []ExportMessage
		for id := c.CurrentLeaf; id != 0; id = byID[id].Parent {
			path = append([]ExportMessage{byID[id]}, path...)
		}
		for _, m := range path {
			fmt.Fprintf(&b, "**%s**", strings.ToUpper(m.Role[:1])+m.Role[1:])
			if n := kids[m.Parent] - 1; n > 0 {
				fmt.Fprintf(&b, " _(%d other version%s not shown)_", n, map[bool]string{true: "s"}[n > 1])
			}
			if m.Partial {
				b.WriteString(" _(incomplete)_")
			}
			fmt.Fprintf(&b, "\n\n%s\n\n", strings.TrimRight(m.Text, "\n"))
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// ImportJSON reads an ExportFile and re-creates its conversations, all in
// one transaction: if any is malformed or already here (same uid), nothing
// is imported. A conversation whose model (by sha256) is in the library is
// linked to it. It returns the new conversations.
func (db *DB) ImportJSON(ctx context.Context, r io.Reader) ([]Conversation, error) {
	var f ExportFile
	dec := json.NewDecoder(r)
	if err := dec.Decode(&f); err != nil {
		return nil, invalid("not an etchat conversation export: %v", err)
	}
	if f.Format != ExportFormat {
		return nil, invalid("not an etchat conversation export (format %q)", f.Format)
	}
	if f.Version > ExportVersion || f.Version < 1 {
		return nil, invalid("export version %d is not one this etchat reads (1 to %d); upgrade etchat", f.Version, ExportVersion)
	}
	for i, c := range f.Conversations {
		if err := checkImport(c); err != nil {
			return nil, invalid("conversation %d (%q): %v", i+1, c.Title, err)
		}
	}
	var out []Conversation
	err := db.write(ctx, "import", func(tx *sql.Tx) error {
		now := db.nowMS()
		for _, ec := range f.Conversations {
			c := Conversation{UID: ec.UID, ModelSHA256: ec.ModelSHA256, ModelName: ec.ModelName, Title: ec.Title,
				Created: ec.Created, Updated: ec.Updated}
			if ec.ModelSHA256 != "" {
				err := tx.QueryRowContext(ctx, "SELECT id FROM models WHERE sha256 = ? ORDER BY last_used_ms DESC LIMIT 1", ec.ModelSHA256).Scan(&c.ModelID)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return err
				}
			}
			settings, _ := jsonText("settings", ec.Settings, "{}")
			id, err := insertConversation(ctx, tx, c, settings, now)
			if err != nil {
				return err
			}
			ids := map[int64]int64{}
			for _, em := range ec.Messages {
				var stats any
				if len(em.Stats) > 0 {
					stats = string(em.Stats)
				}
				mid, err := insertMessage(ctx, tx, Message{ConversationID: id, ParentID: ids[em.Parent], Role: em.Role, Text: em.Text,
					TokenIDs: em.TokenIDs, PosStart: em.PosStart, PosEnd: em.PosEnd, Partial: em.Partial,
					Created: em.Created, Updated: em.Updated}, stats, now)
				if err != nil {
					return err
				}
				ids[em.ID] = mid
			}
			if ec.CurrentLeaf != 0 {
				if _, err := tx.ExecContext(ctx, "UPDATE conversations SET current_leaf_id = ? WHERE id = ?", ids[ec.CurrentLeaf], id); err != nil {
					return err
				}
			}
			got, err := scanConv(tx.QueryRowContext(ctx, "SELECT "+convCols+" FROM conversations c WHERE c.id = ?", id))
			if err != nil {
				return err
			}
			out = append(out, got)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkImport validates one exported conversation before anything is
// written: ids unique, parents earlier in the file, roles and ranges valid.
func checkImport(c ExportConversation) error {
	if len(c.Settings) > 0 && !json.Valid(c.Settings) {
		return errors.New("settings are not valid JSON")
	}
	seen := map[int64]bool{}
	for _, m := range c.Messages {
		if m.ID <= 0 || seen[m.ID] {
			return fmt.Errorf("message id %d is missing or repeated", m.ID)
		}
		if m.Parent != 0 && !seen[m.Parent] {
			return fmt.Errorf("message %d: parent %d does not come before it", m.ID, m.Parent)
		}
		if _, err := checkMessage(Message{Role: m.Role, PosStart: m.PosStart, PosEnd: m.PosEnd, Stats: m.Stats}); err != nil {
			var ie *invalidError
			if errors.As(err, &ie) {
				return fmt.Errorf("message %d: %s", m.ID, ie.reason)
			}
			return fmt.Errorf("message %d: %v", m.ID, err)
		}
		seen[m.ID] = true
	}
	if c.CurrentLeaf != 0 && !seen[c.CurrentLeaf] {
		return fmt.Errorf("current leaf %d is not one of its messages", c.CurrentLeaf)
	}
	return nil
}

// RunExport is a run with its samples, as ExportRunsJSON writes it.
type RunExport struct {
	Run
	Samples []Sample `json:"samples,omitempty"`
}

// ExportRunsJSON writes the runs the filter selects, with their samples, as
// a JSON array.
func (db *DB) ExportRunsJSON(ctx context.Context, w io.Writer, f RunFilter) error {
	runs, err := db.ListRuns(ctx, f)
	if err != nil {
		return err
	}
	out := make([]RunExport, 0, len(runs))
	err = db.read(ctx, "export runs", func(tx *sql.Tx) error {
		for _, r := range runs {
			s, err := querySamples(ctx, tx, r.ID)
			if err != nil {
				return err
			}
			out = append(out, RunExport{Run: r, Samples: s})
		}
		return nil
	})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// RunsCSVHeader is the header row WriteRunsCSV writes.
var RunsCSVHeader = []string{"id", "kind", "started", "ended", "engine", "model_name", "model_sha256", "model_path",
	"n_prompt", "n_gen", "n_depth", "repetitions", "avg_tok_s", "stddev_tok_s",
	"prefill_tok_s", "decode_tok_s", "ttft_ms",
	"model_load_start_ms", "model_load_end_ms", "inference_start_ms", "prompt_eval_end_ms", "first_token_ms",
	"inference_end_ms", "aggregate_sampling_time_ms", "num_prompt_tokens", "num_generated_tokens",
	"aggregate_model_execution_time_ms", "mem_after_load", "mem_after_prefill", "mem_after_decode", "mem_peak",
	"app_version", "error", "config", "machine"}

// WriteRunsCSV writes runs as CSV, one row each, under RunsCSVHeader.
// Unknown memory is an empty cell.
func WriteRunsCSV(w io.Writer, runs []Run) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(RunsCSVHeader); err != nil {
		return err
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	f64 := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	mem := func(v int64) string {
		if v == 0 {
			return ""
		}
		return i64(v)
	}
	tm := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	for _, r := range runs {
		s := r.Stats
		rec := []string{i64(r.ID), r.Kind, tm(r.Started), tm(r.Ended), r.Engine, r.ModelName, r.ModelSHA256, r.ModelPath,
			strconv.Itoa(r.Bench.NPrompt), strconv.Itoa(r.Bench.NGen), strconv.Itoa(r.Bench.NDepth), strconv.Itoa(r.Bench.Repetitions),
			f64(r.Bench.AvgTokS), f64(r.Bench.StddevTokS), f64(r.PrefillTokS), f64(r.DecodeTokS), f64(r.TTFTMs),
			i64(s.ModelLoadStartMs), i64(s.ModelLoadEndMs), i64(s.InferenceStartMs), i64(s.PromptEvalEndMs), i64(s.FirstTokenMs),
			i64(s.InferenceEndMs), i64(s.AggregateSamplingTimeMs), i64(s.NumPromptTokens), i64(s.NumGeneratedTokens),
			i64(s.AggregateModelExecutionTimeMs), mem(r.Memory.AfterLoad), mem(r.Memory.AfterPrefill), mem(r.Memory.AfterDecode), mem(r.Memory.Peak),
			r.AppVersion, r.Error, string(r.Config), string(r.Machine)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
