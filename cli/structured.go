package cli

import (
	"fmt"
	"os"

	"etchat/inference"
	"etchat/inference/grammar"
)

// structuredFlags are etchat run's --json-schema and --grammar: the reply
// is constrained to the grammar (docs/serve.md lists the schema keywords).
type structuredFlags struct {
	schemaPath, grammarPath string
	g                       *grammar.Grammar
}

func (s *structuredFlags) register(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&s.schemaPath, "json-schema", "", "constrain the reply to JSON matching this JSON Schema file")
	fs.StringVar(&s.grammarPath, "grammar", "", "constrain the reply to this GBNF grammar file (start rule: root)")
}

func (s *structuredFlags) set() bool { return s.schemaPath != "" || s.grammarPath != "" }

// check refuses combinations that cannot work, before anything loads.
func (s *structuredFlags) check(o *runOpts) error {
	switch {
	case s.schemaPath != "" && s.grammarPath != "":
		return Usagef("--json-schema and --grammar do not go together: give one")
	case s.set() && o.interactive:
		return Usagef("--json-schema and --grammar constrain a one-shot reply; they do not go with --interactive")
	case s.set() && o.ignoreEOS:
		return Usagef("a constrained reply ends where its grammar does: --ignore-eos does not go with --json-schema or --grammar")
	}
	return nil
}

// compile reads and compiles the file given, once, before the model loads.
func (s *structuredFlags) compile() error {
	var err error
	switch {
	case s.schemaPath != "":
		var b []byte
		if b, err = os.ReadFile(s.schemaPath); err != nil {
			return err
		}
		s.g, err = grammar.FromJSONSchema(b)
	case s.grammarPath != "":
		var b []byte
		if b, err = os.ReadFile(s.grammarPath); err != nil {
			return err
		}
		s.g, err = grammar.Parse(string(b))
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", s.file(), err)
	}
	return nil
}

func (s *structuredFlags) file() string {
	if s.schemaPath != "" {
		return s.schemaPath
	}
	return s.grammarPath
}

// constrain sets a fresh matcher on one generation's options.
func (s *structuredFlags) constrain(m *inference.Model, g *inference.Options) error {
	if s.g == nil {
		return nil
	}
	mt, err := m.Constrain(s.g)
	if err != nil {
		return err
	}
	g.Constraint = mt
	return nil
}
