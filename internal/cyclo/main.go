// Command cyclo is the cyclomatic-complexity gate of scripts/test: no
// function may score more than -over (15), except those in the committed
// baseline, and those may not score more than the baseline records. The
// score is gocyclo's (github.com/fzipp/gocyclo): 1, plus one for each if,
// for, range, non-default case or select clause, && and ||, function
// literals counted in the function that holds them. Test files are not
// checked.
//
//	go run ./internal/cyclo            # check the module against the baseline
//	go run ./internal/cyclo -write     # rewrite the baseline from today's offenders
//
// A function is known by its package directory and name ("inference/cpu
// (*session).exec"), not by file or line, so moving it between files keeps
// its entry.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func main() {
	over := flag.Int("over", 15, "the highest score a function not in the baseline may have")
	baseline := flag.String("baseline", "internal/cyclo/baseline.txt", "the baseline file")
	write := flag.Bool("write", false, "rewrite the baseline with today's offenders instead of checking")
	root := flag.String("root", ".", "the module root")
	flag.Parse()
	scores, err := scan(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cyclo:", err)
		os.Exit(1)
	}
	if *write {
		if err := writeBaseline(*baseline, offenders(scores, *over)); err != nil {
			fmt.Fprintln(os.Stderr, "cyclo:", err)
			os.Exit(1)
		}
		return
	}
	base, err := readBaseline(*baseline)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cyclo:", err)
		os.Exit(1)
	}
	if !report(os.Stdout, scores, base, *over) {
		os.Exit(1)
	}
}

// scan scores every function of the module's non-test Go files under root,
// by "dir name". Functions with the same key (one per build tag, say) keep
// the highest score.
func scan(root string) (map[string]int, error) {
	scores := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || name == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok {
				k := filepath.ToSlash(dir) + " " + funcName(fn)
				scores[k] = max(scores[k], complexity(fn))
			}
		}
		return nil
	})
	return scores, err
}

// funcName is gocyclo's: "f", "T.m" or "(*T).m".
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	star := false
	if s, ok := t.(*ast.StarExpr); ok {
		t, star = s.X, true
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	recv := fmt.Sprint(t)
	if id, ok := t.(*ast.Ident); ok {
		recv = id.Name
	}
	if star {
		return "(*" + recv + ")." + fn.Name.Name
	}
	return recv + "." + fn.Name.Name
}

// complexity is gocyclo's cyclomatic complexity of fn.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	if fn.Body == nil {
		return c
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

func offenders(scores map[string]int, over int) map[string]int {
	out := map[string]int{}
	for k, v := range scores {
		if v > over {
			out[k] = v
		}
	}
	return out
}

// report prints what breaks the gate and what the baseline could drop;
// it returns whether the gate passes.
func report(w io.Writer, scores, base map[string]int, over int) bool {
	var bad, shrunk []string
	for k, v := range scores {
		b, known := base[k]
		switch {
		case v <= over:
			if known {
				shrunk = append(shrunk, fmt.Sprintf("%s: %d, was %d (now within %d)", k, v, b, over))
			}
		case !known:
			bad = append(bad, fmt.Sprintf("%s: %d, over %d (split it)", k, v, over))
		case v > b:
			bad = append(bad, fmt.Sprintf("%s: %d, grew from its baseline %d", k, v, b))
		case v < b:
			shrunk = append(shrunk, fmt.Sprintf("%s: %d, was %d", k, v, b))
		}
	}
	for k, b := range base {
		if _, ok := scores[k]; !ok {
			shrunk = append(shrunk, fmt.Sprintf("%s: gone, was %d", k, b))
		}
	}
	sort.Strings(bad)
	sort.Strings(shrunk)
	for _, s := range bad {
		fmt.Fprintln(w, "cyclo: FAIL", s)
	}
	if len(shrunk) > 0 {
		fmt.Fprintf(w, "cyclo: %d baseline entries shrank or went; `go run ./internal/cyclo -write` records that:\n", len(shrunk))
		for _, s := range shrunk {
			fmt.Fprintln(w, "  ", s)
		}
	}
	return len(bad) == 0
}

const header = `# Functions allowed a cyclomatic complexity over 15, at most the score
# shown (internal/cyclo; regenerate: go run ./internal/cyclo -write).
# Entries may only shrink or go: a new function over 15 fails the gate.
`

func writeBaseline(path string, offenders map[string]int) error {
	keys := make([]string, 0, len(offenders))
	for k := range offenders {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(header)
	for _, k := range keys {
		fmt.Fprintf(&b, "%d %s\n", offenders[k], k)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// readBaseline reads "score dir name" lines; # starts a comment.
func readBaseline(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	base := map[string]int{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		score, key, ok := strings.Cut(t, " ")
		n, err := strconv.Atoi(score)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s:%d: want \"score dir name\", got %q", path, line, t)
		}
		base[key] = n
	}
	return base, sc.Err()
}
