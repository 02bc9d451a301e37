package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"etchat/inference/grammar"
)

var personSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name":  map[string]any{"type": "string", "maxLength": 10, "description": "annotations are ignored"},
		"age":   map[string]any{"type": "integer", "minimum": 0, "maximum": 120},
		"admin": map[string]any{"type": "boolean"},
	},
	"required": []string{"name", "age", "admin"}, "additionalProperties": false, "title": "Person",
	"$schema": "http://json-schema.org/draft-07/schema#",
}

type person struct {
	Name  *string
	Age   *int
	Admin *bool
}

func decodePerson(t *testing.T, text string) person {
	t.Helper()
	var p person
	d := json.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil || p.Name == nil || p.Age == nil || p.Admin == nil || *p.Age < 0 || *p.Age > 120 || len([]rune(*p.Name)) > 10 {
		t.Fatalf("%q does not match the schema: %v", text, err)
	}
	return p
}

// response_format on the random-weight fixture: json_schema (plain and
// streamed, greedy and seeded, chat and completions) and json_object
// replies parse and match; text and no response_format leave the reply
// free (and, from these weights, not JSON).
func TestResponseFormat(t *testing.T) {
	_, ts := newServer(t, Options{})
	chatURL, complURL := ts.URL+"/v1/chat/completions", ts.URL+"/v1/completions"
	msgs := []map[string]string{{"role": "user", "content": "Who are you?"}}
	schemaFormat := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "person", "strict": true, "schema": personSchema}}

	free := post(t, chatURL, map[string]any{"model": llamaID, "messages": msgs, "max_tokens": 40, "temperature": 0,
		"response_format": map[string]any{"type": "text"}})
	if free.status != http.StatusOK || json.Valid([]byte(path(free.doc, "choices", 0, "message", "content").(string))) {
		t.Fatalf("text: %d %s", free.status, free.raw)
	}
	for _, temp := range []float64{0, 1} {
		r := post(t, chatURL, map[string]any{"model": llamaID, "messages": msgs, "max_tokens": 120, "temperature": temp, "seed": 5,
			"response_format": schemaFormat})
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		decodePerson(t, path(r.doc, "choices", 0, "message", "content").(string))
		if f := path(r.doc, "choices", 0, "finish_reason"); f != "stop" {
			t.Errorf("finish_reason %v", f)
		}
	}
	r := post(t, complURL, map[string]any{"model": llamaID, "prompt": "JSON:", "max_tokens": 120, "temperature": 0, "response_format": schemaFormat})
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	decodePerson(t, path(r.doc, "choices", 0, "text").(string))

	// Streamed: the deltas join to a matching reply.
	resp, err := http.Post(chatURL, "application/json", jsonBytes(map[string]any{"model": llamaID, "messages": msgs, "max_tokens": 120,
		"temperature": 0, "stream": true, "response_format": schemaFormat}))
	if err != nil {
		t.Fatal(err)
	}
	docs, done := events(t, resp.Body)
	resp.Body.Close()
	var text strings.Builder
	for _, d := range docs {
		if s, ok := path(d, "choices", 0, "delta", "content").(string); ok {
			text.WriteString(s)
		}
	}
	if !done {
		t.Fatal("no [DONE]")
	}
	decodePerson(t, text.String())

	// json_object bounds no string: these weights may not close one
	// within the budget, and then the reply is the start of an object.
	r = post(t, chatURL, map[string]any{"model": llamaID, "messages": msgs, "max_tokens": 60, "temperature": 0,
		"response_format": map[string]any{"type": "json_object"}})
	content, _ := path(r.doc, "choices", 0, "message", "content").(string)
	whole, prefix := grammar.JSONObject().Match([]byte(content))
	var obj map[string]any
	switch f := path(r.doc, "choices", 0, "finish_reason"); {
	case r.status != http.StatusOK:
		t.Errorf("json_object: %d %s", r.status, r.raw)
	case f == "stop" && (!whole || json.Unmarshal([]byte(content), &obj) != nil):
		t.Errorf("json_object: stopped with %q", content)
	case f == "length" && (!prefix || !strings.HasPrefix(content, "{")):
		t.Errorf("json_object: cut at %q, not the start of an object", content)
	}
}

func TestResponseFormatErrors(t *testing.T) {
	_, ts := newServer(t, Options{})
	url := ts.URL + "/v1/chat/completions"
	msgs := []map[string]string{{"role": "user", "content": "x"}}
	for _, c := range []struct {
		format     any
		param, msg string
	}{
		{map[string]any{"type": "xml"}, "response_format.type", `"xml" is not supported`},
		{map[string]any{}, "response_format.type", "is required"},
		{"json", "response_format", "must be an object"},
		{map[string]any{"type": "json_schema"}, "response_format.json_schema.schema", "is required"},
		{map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "object",
			"properties": map[string]any{"a": map[string]any{"type": "string", "contentEncoding": "base64"}}}}},
			"response_format.json_schema.schema", `"contentEncoding" at /properties/a: not supported`},
		{map[string]any{"type": "json_schema", "json_schema": map[string]any{"schema": map[string]any{"type": "number", "minimum": 1}}},
			"response_format.json_schema.schema", `"minimum"`},
	} {
		r := post(t, url, map[string]any{"model": llamaID, "messages": msgs, "response_format": c.format})
		msg, _ := path(r.doc, "error", "message").(string)
		if r.status != http.StatusBadRequest || path(r.doc, "error", "param") != c.param || !strings.Contains(msg, c.msg) {
			t.Errorf("%v: %d %s", c.format, r.status, r.raw)
		}
	}
}
