// Command testsum reads `go test -json` on standard input and prints what a
// plain `go test` prints (an ok line per package, a failed test's output),
// then one line per group of skipped tests that share a reason, so that a
// machine without a display, GPU or native library says what it did not
// run (scripts/test). A skip is otherwise silent without -v.
//
// It exits 1 when the input is not test2json, never for a test's failure
// (go test's own status says that).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output events (Go 1.24+)
	FailedBuild string
}

type test struct {
	name   string
	output []string
	ended  bool // passed, failed or skipped
}

type pkg struct {
	tests map[string]*test
	order []string // tests as they finished with a failure
	begun []string // tests in the order they started
	lines []string // the package's own output (not a test's)
}

// Skip is one group of skipped tests with the reason they gave.
type Skip struct {
	Reason string
	Tests  []string // package.Test
}

// summary is what one run of go test -json said.
type summary struct {
	pkgs  map[string]*pkg
	skips map[string]*Skip
}

// fileLine is the location testing prefixes to a logged line.
var fileLine = regexp.MustCompile(`^\s*[\w.\-]+\.go:\d+: `)

// reason is the message a skipped test gave: its last logged line.
func reason(out []string) string {
	for i := len(out) - 1; i >= 0; i-- {
		l := strings.TrimRight(out[i], "\n")
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		return fileLine.ReplaceAllString(l, "")
	}
	return "(no reason given)"
}

// run copies the plain go test output of r to w and returns the skips.
func run(r io.Reader, w io.Writer) ([]Skip, error) {
	s := summary{pkgs: map[string]*pkg{}, skips: map[string]*Skip{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' { // go's own messages pass through
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("not go test -json output: %v: %.80s", err, line)
		}
		switch {
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Action == "build-fail":
		case e.Test == "":
			s.packageEvent(w, e)
		default:
			s.testEvent(e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// A package that never finished (the binary crashed, a timeout): show
	// what it printed.
	for _, p := range s.pkgs {
		for _, l := range p.lines {
			fmt.Fprint(w, l)
		}
	}
	return s.sortedSkips(), nil
}

// pkg is the package's record, started at its first event.
func (s *summary) pkg(name string) *pkg {
	p := s.pkgs[name]
	if p == nil {
		p = &pkg{tests: map[string]*test{}}
		s.pkgs[name] = p
	}
	return p
}

// packageEvent takes an event of a package's own (not a test's): its
// output is held until the package finishes, and then printed as go test
// prints it.
func (s *summary) packageEvent(w io.Writer, e event) {
	p := s.pkg(e.Package)
	switch e.Action {
	case "output":
		p.lines = append(p.lines, e.Output)
	case "pass", "skip": // ok, or no test files: the summary line alone
		p.printPassed(w)
		delete(s.pkgs, e.Package)
	case "fail":
		p.printFailed(w)
		delete(s.pkgs, e.Package)
	}
}

func (p *pkg) printPassed(w io.Writer) {
	for _, l := range p.lines {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?   ") {
			fmt.Fprint(w, l)
		}
	}
}

// printFailed prints the failed tests' output, then that of tests that
// never ended (the binary crashed or exited inside them: test2json gives
// them no end event, and their output is where the crash is), then the
// package's own.
func (p *pkg) printFailed(w io.Writer) {
	names := p.order
	for _, n := range p.begun {
		if !p.tests[n].ended {
			names = append(names, n)
		}
	}
	for _, n := range names {
		for _, l := range p.tests[n].output {
			if t := strings.TrimSpace(l); !strings.HasPrefix(t, "=== ") {
				fmt.Fprint(w, l)
			}
		}
	}
	for _, l := range p.lines {
		if strings.TrimSpace(l) != "PASS" {
			fmt.Fprint(w, l)
		}
	}
}

// testEvent takes an event of one test: its output is kept while a
// failure may need it, and a skip joins the group of its reason.
func (s *summary) testEvent(e event) {
	p := s.pkg(e.Package)
	t := p.tests[e.Test]
	if t == nil {
		t = &test{name: e.Test}
		p.tests[e.Test] = t
		p.begun = append(p.begun, e.Test)
	}
	switch e.Action {
	case "pass", "fail", "skip":
		t.ended = true
	}
	switch e.Action {
	case "output":
		t.output = append(t.output, e.Output)
	case "fail":
		p.order = append(p.order, e.Test)
	case "skip":
		why := reason(t.output)
		g := s.skips[why]
		if g == nil {
			g = &Skip{Reason: why}
			s.skips[why] = g
		}
		g.Tests = append(g.Tests, e.Package+"."+e.Test)
	case "pass":
		t.output = nil // only a failure's output is shown
	}
}

// sortedSkips are the skip groups, the largest first, then by reason.
func (s *summary) sortedSkips() []Skip {
	var out []Skip
	for _, g := range s.skips {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].Tests) != len(out[j].Tests) {
			return len(out[i].Tests) > len(out[j].Tests)
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// Line is the skip group as one line: how many, a few of them, and why.
func (g Skip) Line() string {
	names := g.Tests
	more := ""
	if len(names) > 3 {
		names, more = names[:3], fmt.Sprintf(" and %d more", len(g.Tests)-3)
	}
	noun := "tests"
	if len(g.Tests) == 1 {
		noun = "test"
	}
	return fmt.Sprintf("skipped %d %s (%s%s): %s", len(g.Tests), noun, strings.Join(names, ", "), more, g.Reason)
}

func main() {
	skips, err := run(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(1)
	}
	for _, g := range skips {
		fmt.Println(g.Line())
	}
}
