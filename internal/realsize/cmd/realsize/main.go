// Command realsize cuts a .pte export down to its skeleton (program, MLX
// graph, small constants, and a manifest of the dropped weight segments) and
// fills a skeleton back into a loadable real-size .pte with seeded random
// weights. See docs/performance.md, "Real-size programs".
//
//	realsize strip [-keep-below N] -o DIR -name NAME FILE.pte
//	realsize fill [-seed S] -o OUT.pte DIR/NAME
//	realsize census FILE.pte | DIR/NAME
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"etchat/inference/pte"
	"etchat/internal/realsize"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "realsize:", err)
		var u usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError string

func (u usageError) Error() string { return string(u) }

const usage = "usage: realsize strip [-keep-below N] -o DIR -name NAME FILE.pte | fill [-seed S] -o OUT.pte DIR/NAME | census FILE.pte|DIR/NAME"

func run(args []string) error {
	if len(args) == 0 {
		return usageError(usage)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	out := fs.String("o", "", "output: a folder (strip) or a .pte (fill)")
	name := fs.String("name", "", "strip: the skeleton's name (NAME.manifest.json, NAME.skeleton.gz)")
	keep := fs.Int64("keep-below", realsize.DefaultKeepBelow, "strip: keep weight segments smaller than this many bytes")
	seed := fs.Uint64("seed", 1, "fill: the random seed")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError(err.Error())
	}
	if fs.NArg() != 1 {
		return usageError(usage)
	}
	in := fs.Arg(0)
	switch args[0] {
	case "strip":
		return strip(in, *out, *name, *keep)
	case "fill":
		return fill(in, *out, *seed)
	case "census":
		return census(in)
	}
	return usageError(usage)
}

// strip writes in's skeleton as DIR/NAME.manifest.json and .skeleton.gz.
func strip(in, dir, name string, keep int64) error {
	if dir == "" || name == "" {
		return usageError("strip needs -o DIR and -name NAME")
	}
	m, skel, err := realsize.Strip(in, keep)
	if err != nil {
		return err
	}
	if err := realsize.Write(dir, name, m, skel); err != nil {
		return err
	}
	dropped := int64(0)
	for _, s := range m.Segments {
		if !s.Kept {
			dropped += s.Size
		}
	}
	fmt.Printf("%s: %d bytes, %d segments; skeleton %d bytes kept, %d bytes dropped\n", in, m.Source.Size, len(m.Segments), len(skel), dropped)
	return nil
}

// fill writes the program of the skeleton in (DIR/NAME) to out.
func fill(in, out string, seed uint64) error {
	if out == "" {
		return usageError("fill needs -o OUT.pte")
	}
	s, err := realsize.Load(in+".manifest.json", in+".skeleton.gz")
	if err != nil {
		return err
	}
	if err := s.Fill(out, seed); err != nil {
		return err
	}
	fmt.Printf("%s: %d bytes from %s (seed %d)\n", out, s.Size(), in, seed)
	return nil
}

// census prints the census of a .pte or of a skeleton (DIR/NAME).
func census(in string) error {
	var f *pte.File
	var err error
	if strings.HasSuffix(in, ".pte") {
		f, err = pte.Open(in)
	} else {
		var s *realsize.Skeleton
		if s, err = realsize.Load(in+".manifest.json", in+".skeleton.gz"); err == nil {
			f, err = s.Open()
		}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := realsize.TakeCensus(f)
	if err != nil {
		return err
	}
	js, _ := json.MarshalIndent(c, "", " ")
	fmt.Println(string(js))
	return nil
}
