package store

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write missing frozen schema dumps under testdata/schema")

// seeds are rows written right after the migration of the same number,
// in that schema, so that frozen dumps carry data to migrate.
var seeds = map[int]string{
	1: `INSERT INTO models(id, path, sha256, size, mtime_ms, display_name, kind, metadata, added_ms, last_used_ms)
		VALUES (1, '/models/llama.pte', 'aa11', 1234, 1000, 'Llama', 'llm', '{"layers":16}', 1000, 2000);
	INSERT INTO conversations(id, uid, model_id, model_sha256, model_name, title, settings, created_ms, updated_ms)
		VALUES (1, 'seed-conversation', 1, 'aa11', 'Llama', 'seeded', '{"cache":"flat"}', 1000, 3000);
	INSERT INTO messages(id, conversation_id, parent_id, role, text, token_ids, pos_start, pos_end, created_ms, updated_ms)
		VALUES (1, 1, NULL, 'user', 'hi', x'0100000002000000', 0, 2, 1000, 1000),
		       (2, 1, 1, 'assistant', 'hello', x'03000000', 2, 3, 2000, 2000),
		       (3, 1, 1, 'assistant', 'hey', x'04000000', 2, 3, 3000, 3000);
	UPDATE conversations SET current_leaf_id = 3 WHERE id = 1;`,
	2: `INSERT INTO runs(id, kind, engine, model_sha256, model_name, started_ms, num_prompt_tokens, n_prompt, repetitions)
		VALUES (1, 'bench', 'cpu', 'aa11', 'Llama', 4000, 512, 512, 1);
	INSERT INTO bench_samples(run_id, rep, num_prompt_tokens, tok_s) VALUES (1, 1, 512, 99.5);`,
	3: `INSERT INTO runs(id, kind, engine, model_sha256, model_name, started_ms, num_prompt_tokens, aggregate_model_execution_time_ms)
		VALUES (2, 'chat', 'metal', 'aa11', 'Llama', 5000, 7, 42);`,
	4: `INSERT INTO runs(id, kind, engine, model_sha256, model_name, started_ms, num_prompt_tokens, num_generated_tokens, config)
		VALUES (3, 'api', 'cpu', 'aa11', 'Llama', 6000, 30, 8, '{"endpoint":"/v1/chat/completions","cached_tokens":22}');`,
	5: `UPDATE conversations SET revision = 3 WHERE id = 1;`,
	6: `INSERT INTO runs(id, kind, engine, model_sha256, model_name, started_ms, config, ppl, ppl_err, n_scored, kld_mean, kld_mean_err,
		same_top_pct, base_sha256)
		VALUES (4, 'quality', 'cpu', 'aa11', 'Llama', 7000, '{"ctx":128}', 12.5, 0.25, 1449, 0.0125, 0.001, 97.5, 'bb22');`,
	7: `INSERT INTO runs(id, kind, engine, model_sha256, model_name, started_ms, n_prompt, repetitions, numerics)
		VALUES (5, 'bench', 'cpu', 'aa11', 'Llama', 8000, 128, 3, 'fast');`,
	9: `INSERT INTO model_presets(model_id, settings, updated_ms) VALUES (1, '{"system_prompt":"be brief","temperature":0.2}', 9000);`,
}

// buildAt creates a database at path holding the schema after migration
// version, with the seed rows, exactly as an etchat of that version left it.
func buildAt(t *testing.T, path string, version int) {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(migrationsTable); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:version] {
		if _, err := raw.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if _, err := raw.Exec("INSERT INTO schema_migrations VALUES (?, ?, 0)", m.version, m.name); err != nil {
			t.Fatal(err)
		}
		if s := seeds[m.version]; s != "" {
			if _, err := raw.Exec(s); err != nil {
				t.Fatalf("seed %d: %v", m.version, err)
			}
		}
	}
}

// dump writes a database as SQL text: tables, their rows, then indexes.
func dump(t *testing.T, path string) string {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var b strings.Builder
	b.WriteString("PRAGMA foreign_keys=OFF;\nBEGIN;\n")
	type obj struct{ typ, name, sql string }
	var objs []obj
	rows, err := raw.Query("SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' AND sql IS NOT NULL ORDER BY type DESC, rowid")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var o obj
		rows.Scan(&o.typ, &o.name, &o.sql)
		objs = append(objs, o)
	}
	rows.Close()
	for _, o := range objs {
		b.WriteString(o.sql + ";\n")
		if o.typ != "table" {
			continue
		}
		var cols []string
		crows, err := raw.Query("SELECT name FROM pragma_table_info(?) ORDER BY cid", o.name)
		if err != nil {
			t.Fatal(err)
		}
		for crows.Next() {
			var c string
			crows.Scan(&c)
			cols = append(cols, "quote("+c+")")
		}
		crows.Close()
		q := fmt.Sprintf("SELECT 'INSERT INTO %s VALUES(' || %s || ');' FROM %s ORDER BY 1", o.name, strings.Join(cols, " || ',' || "), o.name)
		irows, err := raw.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for irows.Next() {
			var s string
			irows.Scan(&s)
			b.WriteString(s + "\n")
		}
		irows.Close()
	}
	b.WriteString("COMMIT;\n")
	return b.String()
}

func schemaOf(t *testing.T, db *DB) []string {
	t.Helper()
	rows, err := db.sql.Query("SELECT type || ' ' || name || ' ON ' || tbl_name || ': ' || coalesce(sql, '') FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

func frozenPath(v int) string {
	return filepath.Join("testdata", "schema", fmt.Sprintf("v%04d.sql", v))
}

// TestMigrateFrozenSchemas migrates a frozen copy of every earlier schema
// (with data) to the current one and compares it with a fresh database;
// migrating twice changes nothing. It also fails when a migration that was
// already frozen is edited: add a new migration instead.
func TestMigrateFrozenSchemas(t *testing.T) {
	ctx := context.Background()
	fresh := openTest(t, "")
	want := schemaOf(t, fresh)
	latest := SchemaVersion()
	for v := 1; v <= latest; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			built := filepath.Join(t.TempDir(), "built.db")
			buildAt(t, built, v)
			now := dump(t, built)
			frozen, err := os.ReadFile(frozenPath(v))
			if errors.Is(err, os.ErrNotExist) && *update {
				os.MkdirAll(filepath.Dir(frozenPath(v)), 0o755)
				if err := os.WriteFile(frozenPath(v), []byte(now), 0o644); err != nil {
					t.Fatal(err)
				}
				frozen = []byte(now)
			} else if err != nil {
				t.Fatalf("no frozen dump of schema %d (%v): run 'go test ./store -run TestMigrateFrozenSchemas -update' and commit %s", v, err, frozenPath(v))
			}
			if string(frozen) != now {
				t.Fatalf("migrations up to %d no longer produce the frozen %s: a released migration was edited; put the change in a new migration", v, frozenPath(v))
			}

			// Load the frozen copy as a user's file and open it.
			path := filepath.Join(t.TempDir(), "old.db")
			raw, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Exec(string(frozen)); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			for pass := 1; pass <= 2; pass++ {
				db, err := Open(ctx, path, Options{})
				if err != nil {
					t.Fatalf("pass %d: %v", pass, err)
				}
				if got := schemaOf(t, db); !reflect.DeepEqual(got, want) {
					t.Errorf("pass %d: migrated schema differs from a fresh one:\n got %q\nwant %q", pass, got, want)
				}
				if got, _ := db.Version(ctx); got != latest {
					t.Errorf("pass %d: version %d, want %d", pass, got, latest)
				}
				var applied int
				db.sql.QueryRow("SELECT count(*) FROM schema_migrations").Scan(&applied)
				if applied != latest {
					t.Errorf("pass %d: %d migration rows, want %d", pass, applied, latest)
				}
				// The seeded conversation reads back through the API.
				c, err := db.GetConversation(ctx, 1)
				if err != nil || (pass == 1 && c.CurrentLeaf != 3) {
					t.Errorf("pass %d: seeded conversation %+v, %v", pass, c, err)
				}
				p, err := db.Path(ctx, 3)
				if err != nil || c.Title != "seeded" || len(p) != 2 || p[1].Text != "hey" || !reflect.DeepEqual(p[0].TokenIDs, []int32{1, 2}) {
					t.Errorf("pass %d: seeded conversation %+v %+v %v", pass, c, p, err)
				}
				if err := db.IntegrityCheck(ctx); err != nil {
					t.Error(err)
				}
				if _, err := db.AddMessage(ctx, Message{ConversationID: 1, ParentID: 3, Role: "user", Text: "more"}); err != nil {
					t.Errorf("pass %d: writing to the migrated file: %v", pass, err)
				}
				db.Close()
			}
		})
	}
}

func TestMigrationsAreNumbered(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 2 || ms[0].name != "0001_init" {
		t.Errorf("migrations %v", ms)
	}
}
