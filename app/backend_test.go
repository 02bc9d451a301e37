package app

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// A database another process holds: the window opens without it and says
// what to do; one that is not a database: the same, naming the file.
func TestOpenBackendExplainsDatabaseProblems(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the store's busy timeout")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "locked.db")
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE; CREATE TABLE held(x)"); err != nil {
		t.Fatal(err)
	}
	b, closeB := OpenBackend(ctx, Options{DB: path}, nil, func(string) string { return "" })
	defer closeB()
	if b.StoreErr == nil || b.Library != nil {
		t.Fatalf("locked database opened: %v", b.StoreErr)
	}
	if msg := b.StoreErr.Error(); !strings.Contains(msg, "locked by another etchat") || !strings.Contains(msg, "saves nothing") {
		t.Errorf("locked: %q", msg)
	}
	conn.ExecContext(ctx, "ROLLBACK")

	junk := filepath.Join(t.TempDir(), "junk.db")
	os.WriteFile(junk, []byte("definitely not sqlite, but long enough to have a header......"), 0o644)
	b, closeB2 := OpenBackend(ctx, Options{DB: junk}, nil, func(string) string { return "" })
	defer closeB2()
	if b.StoreErr == nil || !strings.Contains(b.StoreErr.Error(), junk) || !strings.Contains(b.StoreErr.Error(), "saves nothing") {
		t.Errorf("junk: %v", b.StoreErr)
	}

	// a good one
	good := filepath.Join(t.TempDir(), "good.db")
	b, closeB3 := OpenBackend(ctx, Options{DB: good}, nil, func(string) string { return "" })
	defer closeB3()
	if b.StoreErr != nil || b.Library == nil || b.DBPath != good {
		t.Errorf("good: %v %q", b.StoreErr, b.DBPath)
	}
}
