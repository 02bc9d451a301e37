package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"etchat/inference/chattmpl"
	"etchat/inference/chattmpl/jinja"
)

// varsFlag collects repeated --var name=json flags.
type varsFlag map[string]any

func (v varsFlag) String() string { return "" }

func (v varsFlag) Set(s string) error {
	name, val, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return errors.New("want name=json")
	}
	x, err := jinja.DecodeJSON([]byte(val))
	if err != nil {
		return fmt.Errorf("value of %s is not JSON (quote strings: %s='\"text\"')", name, name)
	}
	v[name] = x
	return nil
}

// runTemplate renders a chat template over messages and prints exactly the
// rendered text.
func runTemplate(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "template", "--messages FILE.json [--tokenizer-config PATH] [--chat NAME] [--add-generation-prompt] [--var name=json]...")
	cfgPath := fs.String("tokenizer-config", "", "tokenizer_config.json holding the model's chat template")
	msgPath := fs.String("messages", "", "JSON file of messages: a list of {role, content, ...}, or an object with \"messages\" (and \"tools\"); - reads stdin")
	toolsPath := fs.String("tools", "", "JSON file of tool definitions (a list), passed to the template as tools")
	addGen := fs.Bool("add-generation-prompt", false, "end with the header that opens the assistant's reply")
	chat := fs.String("chat", "", "template: a built-in ("+strings.Join(chattmpl.BuiltinNames(), ", ")+", 0), or a name from the config's chat_template list; default: the config's default template")
	vars := varsFlag{}
	fs.Var(vars, "var", "extra template variable as name=json, e.g. enable_thinking=false (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q", fs.Arg(0))
	}
	if *msgPath == "" {
		return Usagef("--messages is required")
	}
	tmpl, err := pickTemplate(*cfgPath, *chat)
	if err != nil {
		return err
	}
	messages, tools, err := readMessages(env, *msgPath)
	if err != nil {
		return err
	}
	if *toolsPath != "" {
		b, err := os.ReadFile(*toolsPath)
		if err != nil {
			return err
		}
		v, err := jinja.DecodeJSON(b)
		if err != nil {
			return fmt.Errorf("%s: %w", *toolsPath, err)
		}
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: tools must be a JSON list", *toolsPath)
		}
		tools = list
	}
	out, err := tmpl.Render(messages, chattmpl.RenderOptions{AddGenerationPrompt: *addGen, Tools: tools, Vars: vars})
	if err != nil {
		return err
	}
	_, err = io.WriteString(env.Stdout, out)
	return err
}

func pickTemplate(cfgPath, chat string) (*chattmpl.Template, error) {
	if t, err := chattmpl.Builtin(chat); err == nil {
		return t, nil
	}
	if cfgPath == "" {
		if chat == "" {
			return nil, Usagef("give --tokenizer-config, or --chat with a built-in template (%s, 0)", strings.Join(chattmpl.BuiltinNames(), ", "))
		}
		return nil, Usagef("--chat %q is not a built-in template (%s, 0); a named template needs --tokenizer-config", chat, strings.Join(chattmpl.BuiltinNames(), ", "))
	}
	cfg, err := chattmpl.LoadConfig(cfgPath)
	if err != nil {
		return nil, err
	}
	if chat == "auto" || chat == "model" {
		chat = ""
	}
	return cfg.Template(chat)
}

func readMessages(env *Env, path string) ([]chattmpl.Message, []any, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(env.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, nil, err
	}
	var list []chattmpl.Message
	if err := json.Unmarshal(b, &list); err == nil {
		return list, nil, nil
	}
	var obj struct {
		Messages []chattmpl.Message `json:"messages"`
		Tools    json.RawMessage    `json:"tools"`
	}
	if err := json.Unmarshal(b, &obj); err != nil || obj.Messages == nil {
		if err == nil {
			err = errors.New("no \"messages\" list")
		}
		return nil, nil, fmt.Errorf("%s: want a JSON list of messages or an object with \"messages\": %v", path, err)
	}
	var tools []any
	if len(obj.Tools) > 0 && string(obj.Tools) != "null" {
		v, err := jinja.DecodeJSON(obj.Tools)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: tools: %w", path, err)
		}
		l, ok := v.([]any)
		if !ok {
			return nil, nil, fmt.Errorf("%s: tools must be a list", path)
		}
		tools = l
	}
	return obj.Messages, tools, nil
}
