package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"

	"etchat/inference"
	"etchat/inference/grammar"
)

// Structured output: response_format on both endpoints. text is the
// default; json_object is any JSON object; json_schema is the schema's
// grammar (docs/serve.md lists the keywords enforced; any other is a 400
// naming it). strict is accepted either way: the grammar is always
// enforced, since a model that may stray gives the client nothing to rely
// on.

type wireResponseFormat struct {
	ResponseFormat json.RawMessage `json:"response_format"`
}

// jsonObject is json_object's grammar, compiled once.
var jsonObject = sync.OnceValue(grammar.JSONObject)

// decodeResponseFormat reads body's response_format into r.Grammar.
func (r *request) decodeResponseFormat(body []byte) *apiError {
	var w wireResponseFormat
	if err := json.Unmarshal(body, &w); err != nil {
		return badRequest("response_format", "response_format: %v", err)
	}
	raw := bytes.TrimSpace(w.ResponseFormat)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var rf struct {
		Type       *string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return badRequest("response_format", "response_format must be an object with a type: %v", err)
	}
	if rf.Type == nil {
		return badRequest("response_format.type", "response_format.type is required (text, json_object or json_schema)")
	}
	switch *rf.Type {
	case "text":
		return nil
	case "json_object":
		r.Grammar = jsonObject()
		return nil
	case "json_schema":
		if rf.JSONSchema == nil || len(bytes.TrimSpace(rf.JSONSchema.Schema)) == 0 {
			return badRequest("response_format.json_schema.schema", "response_format.json_schema.schema is required")
		}
		g, err := grammar.FromJSONSchema(rf.JSONSchema.Schema)
		var se *grammar.SchemaError
		if errors.As(err, &se) {
			return badRequest("response_format.json_schema.schema", "%v", se)
		}
		if err != nil {
			return badRequest("response_format.json_schema.schema", "the schema's grammar: %v", err)
		}
		r.Grammar = g
		return nil
	}
	return badRequest("response_format.type", "response_format.type %q is not supported (text, json_object or json_schema)", clip(*rf.Type))
}

// constrain sets a fresh matcher of the request's grammar on gen.
func constrain(m *inference.Model, req *request, gen *inference.Options) error {
	if req.Grammar == nil {
		return nil
	}
	mt, err := m.Constrain(req.Grammar)
	if err != nil {
		return err
	}
	gen.Constraint = mt
	return nil
}
