package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// assertMoveAside checks a file-level error names the file and says how to
// move it aside.
func assertMoveAside(t *testing.T, err error, path string) {
	t.Helper()
	msg := Explain(err)
	if !strings.Contains(msg, path) || !strings.Contains(msg, "mv ") || !strings.Contains(msg, "not changed") {
		t.Errorf("message does not name the file and say how to move it aside: %s", msg)
	}
}

func TestNotADatabaseIsRefusedUntouched(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"text":      []byte("these are my notes, not a database\n"),
		"short":     []byte("SQL"),
		"fakeMagic": append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xff}, 5000)...),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".db")
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			db, err := Open(context.Background(), path, Options{})
			if err == nil {
				db.Close()
				t.Fatal("opened a file that is not a database")
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("got %v, want ErrCorrupt", err)
			}
			assertMoveAside(t, err, path)
			if got := readFile(t, path); !bytes.Equal(got, content) {
				t.Errorf("the file was changed")
			}
			for _, ext := range []string{"-wal", "-shm", "-journal"} {
				if _, err := os.Stat(path + ext); err == nil {
					t.Errorf("left %s behind", ext)
				}
			}
		})
	}
	t.Run("folder", func(t *testing.T) {
		_, err := Open(context.Background(), dir, Options{})
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("a folder as database: %v", err)
		}
	})
}

func TestForeignSQLiteIsRefusedUntouched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos(name) VALUES ('cat')"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	before := readFile(t, path)
	_, err = Open(context.Background(), path, Options{})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "another program") {
		t.Fatalf("opening another program's database: %v", err)
	}
	assertMoveAside(t, err, path)
	if !bytes.Equal(readFile(t, path), before) {
		t.Errorf("the other program's database was changed")
	}
}

func TestDamagedPagesAreReported(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "etchat.db")
	db := openTest(t, path)
	c := mustConv(t, db, Conversation{Title: "x"})
	for i := range 200 {
		mustAdd(t, db, Message{ConversationID: c.ID, Role: "user", Text: strings.Repeat("text ", 50) + strconv.Itoa(i)})
	}
	db.Close()
	b := readFile(t, path)
	if len(b) < 8*4096 {
		t.Fatalf("database too small to damage: %d bytes", len(b))
	}
	// Scribble over everything after the first page: the schema's pages and
	// the messages.
	for i := 4096; i < len(b); i++ {
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(ctx, path, Options{})
	if err == nil {
		defer db2.Close()
		err = db2.IntegrityCheck(ctx)
		if err == nil {
			_, err = db2.Messages(ctx, c.ID)
		}
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged database: got %v, want ErrCorrupt", err)
	}
	assertMoveAside(t, err, path)
}

func TestNewerDatabaseIsRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "etchat.db")
	db := openTest(t, path)
	mustConv(t, db, Conversation{Title: "from the future"})
	if _, err := db.sql.Exec("INSERT INTO schema_migrations(version, name, applied_ms) VALUES (?, 'future', 0)", SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := readFile(t, path)
	_, err := Open(ctx, path, Options{})
	if !errors.Is(err, ErrTooNew) {
		t.Fatalf("got %v, want ErrTooNew", err)
	}
	msg := Explain(err)
	if !strings.Contains(msg, path) || !strings.Contains(msg, "newer etchat") || !strings.Contains(msg, "Upgrade") {
		t.Errorf("unclear message: %s", msg)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Errorf("the newer database was changed")
	}
	// Nothing migrated down: the future row is still there.
	raw, _ := sql.Open("sqlite", path)
	defer raw.Close()
	var v int
	raw.QueryRow("SELECT max(version) FROM schema_migrations").Scan(&v)
	if v != SchemaVersion()+1 {
		t.Errorf("schema version now %d", v)
	}
}

// The child side of TestKilledWhileStreaming and TestTwoProcessesWrite: it
// does what ETCHAT_STORE_CHILD says against ETCHAT_STORE_DB and never
// returns on its own in "stream" mode.
func TestMain(m *testing.M) {
	switch os.Getenv("ETCHAT_STORE_CHILD") {
	case "stream":
		childStream(os.Getenv("ETCHAT_STORE_DB"))
	case "write":
		n, _ := strconv.Atoi(os.Getenv("ETCHAT_STORE_N"))
		os.Exit(childWrite(os.Getenv("ETCHAT_STORE_DB"), n))
	}
	os.Exit(m.Run())
}

// childStream chats forever: a user turn, then a reply streamed token by
// token, printing "committed N" after every committed turn so the parent
// knows what must survive.
func childStream(path string) {
	ctx := context.Background()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	c, err := db.CreateConversation(ctx, Conversation{Title: "streaming"})
	if err != nil {
		fmt.Println("create:", err)
		os.Exit(3)
	}
	parent := int64(0)
	pos := 0
	for turn := 1; ; turn++ {
		u, err := db.AddMessage(ctx, Message{ConversationID: c.ID, ParentID: parent, Role: "user", Text: fmt.Sprintf("question %d", turn),
			TokenIDs: []int32{int32(turn)}, PosStart: pos, PosEnd: pos + 1})
		if err != nil {
			fmt.Println("add:", err)
			os.Exit(3)
		}
		pos++
		a, err := db.AddMessage(ctx, Message{ConversationID: c.ID, ParentID: u.ID, Role: "assistant", Partial: true, PosStart: pos, PosEnd: pos})
		if err != nil {
			fmt.Println("add:", err)
			os.Exit(3)
		}
		for i := 0; i < 8; i++ {
			a.TokenIDs = append(a.TokenIDs, int32(1000+i))
			a.Text += fmt.Sprintf("w%d ", i)
			a.PosEnd = pos + len(a.TokenIDs)
			a.Partial = i < 7
			if err := db.UpdateMessage(ctx, a); err != nil {
				fmt.Println("update:", err)
				os.Exit(3)
			}
		}
		pos = a.PosEnd
		parent = a.ID
		fmt.Printf("committed %d %d\n", c.ID, turn)
	}
}

func TestKilledWhileStreaming(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "etchat.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ETCHAT_STORE_CHILD=stream", "ETCHAT_STORE_DB="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read progress until a few turns are committed, then kill mid-stream.
	var lines []string
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		var acc string
		for {
			n, err := out.Read(buf)
			acc += string(buf[:n])
			mu.Lock()
			lines = strings.Split(acc, "\n")
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(lines)
		mu.Unlock()
		if n > 6 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Let it get into the middle of a reply.
	time.Sleep(3 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	<-done
	var convID int64
	lastTurn := 0
	for _, l := range lines {
		var c int64
		var turn int
		if _, err := fmt.Sscanf(l, "committed %d %d", &c, &turn); err == nil {
			convID, lastTurn = c, turn
		} else if l != "" && !strings.HasPrefix(l, "committed") {
			t.Errorf("child said: %s", l)
		}
	}
	if lastTurn < 3 {
		t.Fatalf("the child committed only %d turns: %q", lastTurn, lines)
	}

	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer db.Close()
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	_, p, err := db.CurrentPath(ctx, convID)
	if err != nil {
		t.Fatal(err)
	}
	// Every turn the child reported is there, complete, in order, with its
	// tokens and positions; at most the turn after it is partial.
	if len(p) < 2*lastTurn {
		t.Fatalf("path has %d messages; %d turns were committed", len(p), lastTurn)
	}
	pos := 0
	for i := 0; i < 2*lastTurn; i += 2 {
		u, a := p[i], p[i+1]
		turn := i/2 + 1
		if u.Text != fmt.Sprintf("question %d", turn) || u.PosStart != pos || a.Partial || len(a.TokenIDs) != 8 || a.PosEnd != pos+9 {
			t.Fatalf("turn %d damaged: %+v / %+v", turn, u, a)
		}
		pos = a.PosEnd
	}
	if extra := p[2*lastTurn:]; len(extra) > 2 {
		t.Errorf("%d messages after the last committed turn", len(extra))
	} else if len(extra) == 2 && len(extra[1].TokenIDs) != extra[1].PosEnd-extra[1].PosStart {
		t.Errorf("the reply in progress is inconsistent: %+v", extra[1])
	}
}

// childWrite adds n turns and n runs through its own connection pool,
// retrying only on ErrBusy, and reports busy retries on stdout.
func childWrite(path string, n int) int {
	ctx := context.Background()
	var db *DB
	var err error
	for try := 0; try < 20; try++ {
		if db, err = Open(ctx, path, Options{}); !errors.Is(err, ErrBusy) {
			break
		}
	}
	if err != nil {
		fmt.Println("open:", err)
		return 3
	}
	defer db.Close()
	busy, err := writeLoad(ctx, db, n)
	fmt.Println("busy", busy)
	if err != nil {
		fmt.Println("write:", err)
		return 3
	}
	return 0
}

// writeLoad writes n user/assistant pairs and n runs, retrying on ErrBusy.
// It returns how many retries it needed.
func writeLoad(ctx context.Context, db *DB, n int) (busy int, err error) {
	retry := func(f func() error) error {
		for {
			err := f()
			if !errors.Is(err, ErrBusy) {
				return err
			}
			busy++
			time.Sleep(10 * time.Millisecond)
		}
	}
	var c Conversation
	if err := retry(func() (err error) { c, err = db.CreateConversation(ctx, Conversation{Title: "load"}); return }); err != nil {
		return busy, err
	}
	parent := int64(0)
	for i := 0; i < n; i++ {
		var m Message
		if err := retry(func() (err error) {
			m, err = db.AddMessage(ctx, Message{ConversationID: c.ID, ParentID: parent, Role: "user", Text: "q", TokenIDs: []int32{1, 2}})
			return
		}); err != nil {
			return busy, err
		}
		if err := retry(func() (err error) {
			m, err = db.AddMessage(ctx, Message{ConversationID: c.ID, ParentID: m.ID, Role: "assistant", Text: "a"})
			return
		}); err != nil {
			return busy, err
		}
		parent = m.ID
		if err := retry(func() error {
			_, err := db.InsertRun(ctx, Run{Kind: "chat", ConversationID: c.ID}, nil)
			return err
		}); err != nil {
			return busy, err
		}
	}
	return busy, nil
}

func checkLoad(t *testing.T, db *DB, writers, n int) {
	t.Helper()
	ctx := context.Background()
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	convs, err := db.ListConversations(ctx, 0)
	if err != nil || len(convs) != writers {
		t.Fatalf("%d conversations, %v; want %d", len(convs), err, writers)
	}
	for _, c := range convs {
		p, err := db.Path(ctx, c.CurrentLeaf)
		if err != nil || len(p) != 2*n || c.Messages != 2*n {
			t.Errorf("conversation %d: path %d, %d messages, %v; want %d", c.ID, len(p), c.Messages, err, 2*n)
		}
	}
	runs, err := db.ListRuns(ctx, RunFilter{})
	if err != nil || len(runs) != writers*n {
		t.Errorf("%d runs, %v; want %d", len(runs), err, writers*n)
	}
}

func TestTwoHandlesWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "etchat.db")
	const writers, n = 4, 40
	var wg sync.WaitGroup
	errs := make([]error, writers)
	busy := make([]int, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer has its own handle (its own pool of connections),
			// as a second process would; all open the new file at once. An
			// open that meets another's migration past the busy timeout (a
			// loaded machine, -race) is told to try again, and does.
			db, err := Open(ctx, path, Options{})
			for tries := 0; errors.Is(err, ErrBusy) && tries < 20; tries++ {
				busy[w]++
				time.Sleep(50 * time.Millisecond)
				db, err = Open(ctx, path, Options{})
			}
			if err != nil {
				errs[w] = err
				return
			}
			defer db.Close()
			busy[w], errs[w] = writeLoad(ctx, db, n)
		}()
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", w, err)
		}
	}
	t.Logf("busy retries: %v", busy)
	db := openTest(t, path)
	checkLoad(t, db, writers, n)
}

func TestTwoProcessesWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	path := filepath.Join(t.TempDir(), "etchat.db")
	const writers, n = 2, 40
	var wg sync.WaitGroup
	outs := make([][]byte, writers)
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "ETCHAT_STORE_CHILD=write", "ETCHAT_STORE_DB="+path, "ETCHAT_STORE_N="+strconv.Itoa(n))
			outs[w], errs[w] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for w := range writers {
		if errs[w] != nil {
			t.Errorf("writer %d: %v: %s", w, errs[w], outs[w])
		} else {
			t.Logf("writer %d: %s", w, bytes.TrimSpace(outs[w]))
		}
	}
	db := openTest(t, path)
	checkLoad(t, db, writers, n)
}

func TestBusyIsReportedClearly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "etchat.db")
	db := openTest(t, path)
	other, err := Open(ctx, path, Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// Hold the write lock from the first handle.
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO models(path, added_ms) VALUES ('/held', 0)"); err != nil {
		t.Fatal(err)
	}
	_, err = other.CreateConversation(ctx, Conversation{Title: "blocked"})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("got %v, want ErrBusy", err)
	}
	if msg := Explain(err); !strings.Contains(msg, "busy") || !strings.Contains(msg, "try again") {
		t.Errorf("unclear: %s", msg)
	}
	tx.Rollback()
	if _, err := other.CreateConversation(ctx, Conversation{Title: "later"}); err != nil {
		t.Errorf("after the lock was released: %v", err)
	}
}
