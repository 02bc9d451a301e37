package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"etchat/inference"
	"etchat/inference/grammar"
	"etchat/inference/sampler"
)

// request is a chat or text completion request, decoded and checked: what
// the generation needs, whichever endpoint it came from.
type request struct {
	Model    string
	Messages []inference.Message // chat
	Prompt   string              // completions, as text
	PromptID []int               // completions, as token ids
	IsChat   bool

	Stream       bool
	IncludeUsage bool // stream_options.include_usage
	MaxTokens    int  // -1: not given (up to the cache's room)
	Sampling     sampler.Sampling
	Stop         []string
	ReturnIDs    bool             // return_token_ids (extension): prompt and completion token ids in the response
	Grammar      *grammar.Grammar // response_format's constraint (structured.go); nil: free text

	// Choices and log-probabilities (issue 43).
	N           int  // n: choices generated one after another (1 to maxN)
	Logprobs    bool // chat logprobs: true; completions logprobs: N ≥ 0
	TopLogprobs int  // chat top_logprobs; completions' logprobs N

	Tools *toolRequest // tools and tool_choice (tools.go); nil: none
}

// options common to both endpoints, as JSON sends them. Pointers tell a
// field left out from a zero.
type wireOptions struct {
	Model               *string          `json:"model"`
	Stream              *bool            `json:"stream"`
	StreamOptions       *json.RawMessage `json:"stream_options"`
	MaxTokens           *int             `json:"max_tokens"`
	MaxCompletionTokens *int             `json:"max_completion_tokens"`
	Temperature         *float64         `json:"temperature"`
	TopP                *float64         `json:"top_p"`
	TopK                *int             `json:"top_k"`
	Seed                *int64           `json:"seed"`
	Stop                json.RawMessage  `json:"stop"`
	N                   *int             `json:"n"`
	ReturnTokenIDs      *bool            `json:"return_token_ids"`
	Logprobs            json.RawMessage  `json:"logprobs"`
	TopLogprobs         *int             `json:"top_logprobs"`
	Tools               json.RawMessage  `json:"tools"`
}

type wireChat struct {
	wireOptions
	Messages *[]wireMessage `json:"messages"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls"`   // an assistant's calls (tools.go)
	ToolCallID string          `json:"tool_call_id"` // a tool message's call
}

type wireCompletion struct {
	wireOptions
	Prompt json.RawMessage `json:"prompt"`
	Echo   *bool           `json:"echo"`
	Suffix *string         `json:"suffix"`
}

// Limits on what one request may ask, so that no input costs more than a
// bounded amount of work before it is refused.
const (
	maxStops    = 4 // OpenAI's limit
	maxStopLen  = 256
	maxMessages = 4096
	maxN        = 16 // choices per request: they run one after another
)

// decodeChat reads a /v1/chat/completions body. Unknown fields are
// ignored, as OpenAI-compatible servers do (clients send many); a field
// with a wrong type or value is a 400 naming it.
func decodeChat(body []byte) (*request, *apiError) {
	var w wireChat
	if e := unmarshal(body, &w); e != nil {
		return nil, e
	}
	r, e := w.wireOptions.check(true)
	if e != nil {
		return nil, e
	}
	if w.Messages == nil {
		return nil, badRequest("messages", "messages is required")
	}
	msgs := *w.Messages
	if len(msgs) == 0 {
		return nil, badRequest("messages", "messages is empty")
	}
	if len(msgs) > maxMessages {
		return nil, badRequest("messages", "%d messages; at most %d", len(msgs), maxMessages)
	}
	for i, m := range msgs {
		msg, e := m.decode(fmt.Sprintf("messages[%d]", i))
		if e != nil {
			return nil, e
		}
		r.Messages = append(r.Messages, msg)
	}
	if last := r.Messages[len(r.Messages)-1]; last.Role == inference.RoleAssistant {
		return nil, badRequest("messages", "the last message is the assistant's; continuing a reply is not supported")
	}
	r.IsChat = true
	return r, nil
}

// decode reads one chat message: its role, text, and an assistant's tool
// calls or a tool message's call id.
func (m wireMessage) decode(param string) (inference.Message, *apiError) {
	role := m.Role
	switch role {
	case inference.RoleSystem, inference.RoleUser, inference.RoleAssistant, inference.RoleTool:
	case "developer": // OpenAI's newer name for the system role
		role = inference.RoleSystem
	case "":
		return inference.Message{}, badRequest(param+".role", "%s.role is required", param)
	default:
		return inference.Message{}, badRequest(param+".role", "%s.role %q is not supported (system, developer, user, assistant or tool)", param, clip(role))
	}
	text, e := contentText(m.Content, param+".content")
	if e != nil {
		return inference.Message{}, e
	}
	msg := inference.Message{Role: role, Text: text}
	if role == inference.RoleAssistant {
		if msg.ToolCalls, e = decodeToolCalls(m.ToolCalls, param+".tool_calls"); e != nil {
			return inference.Message{}, e
		}
	}
	if role == inference.RoleTool {
		msg.ToolCallID = m.ToolCallID
	}
	return msg, nil
}

// contentText is a message's content: a string, or an array of text parts
// (concatenated); null is empty.
func contentText(raw json.RawMessage, param string) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badRequest(param, "%s: %v", param, err)
		}
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(param, "%s must be a string or an array of text parts", param)
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return "", badRequest(fmt.Sprintf("%s[%d]", param, i), "%s[%d]: only text parts are supported (type %q)", param, i, clip(p.Type))
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

// decodeCompletion reads a /v1/completions body: prompt is a string, or
// token ids, or a one-element array of either.
func decodeCompletion(body []byte) (*request, *apiError) {
	var w wireCompletion
	if e := unmarshal(body, &w); e != nil {
		return nil, e
	}
	r, e := w.wireOptions.check(false)
	if e != nil {
		return nil, e
	}
	if w.Echo != nil && *w.Echo {
		return nil, badRequest("echo", "echo is not supported")
	}
	if t := bytes.TrimSpace(w.Tools); len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("[]")) {
		return nil, badRequest("tools", "tools are a chat field (/v1/chat/completions)")
	}
	if w.Suffix != nil && *w.Suffix != "" {
		return nil, badRequest("suffix", "suffix is not supported")
	}
	if e := r.decodePrompt(w.Prompt); e != nil {
		return nil, e
	}
	return r, nil
}

// decodePrompt reads a completion's prompt into r: a string, token ids,
// or a one-element array of either.
func (r *request) decodePrompt(raw json.RawMessage) *apiError {
	p := bytes.TrimSpace(raw)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return badRequest("prompt", "prompt is required")
	}
	var s string
	var ids []int
	var strs []string
	var batch [][]int
	switch {
	case json.Unmarshal(p, &s) == nil:
		r.Prompt = s
	case json.Unmarshal(p, &ids) == nil:
		r.PromptID = ids
	case json.Unmarshal(p, &strs) == nil:
		if len(strs) != 1 {
			return badRequest("prompt", "prompt holds %d texts; one prompt per request is supported", len(strs))
		}
		r.Prompt = strs[0]
	case json.Unmarshal(p, &batch) == nil:
		if len(batch) != 1 {
			return badRequest("prompt", "prompt holds %d token lists; one prompt per request is supported", len(batch))
		}
		r.PromptID = batch[0]
	default:
		return badRequest("prompt", "prompt must be a string, an array of token ids, or a one-element array of either")
	}
	return r.checkPrompt()
}

// checkPrompt refuses an empty prompt and a negative token id.
func (r *request) checkPrompt() *apiError {
	if r.PromptID == nil {
		if r.Prompt == "" {
			return badRequest("prompt", "prompt is empty")
		}
		return nil
	}
	if len(r.PromptID) == 0 {
		return badRequest("prompt", "prompt is empty")
	}
	for i, id := range r.PromptID {
		if id < 0 {
			return badRequest("prompt", "prompt token %d is %d, not a token id", i, id)
		}
	}
	return nil
}

// unmarshal decodes one JSON object, turning the decoder's errors into
// 400s that name the field.
func unmarshal(body []byte, v any) *apiError {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return badRequest("", "the request body is empty; send a JSON object")
	}
	if body[0] != '{' {
		return badRequest("", "the request body is not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("data after the JSON object")
	}
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		field := strings.TrimPrefix(te.Field, "wireOptions.") // the embedded struct is not the client's
		return badRequest(field, "field %s: expected %s, got JSON %s", field, jsonKind(te.Type), te.Value)
	}
	return badRequest("", "the request body is not valid JSON: %v", err)
}

// jsonKind names a Go type as the JSON the client should send (never a
// Go type name: "expected []serve.wireMessage" helps nobody).
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Name() == "RawMessage" {
			return "a JSON value"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
}

// check validates the shared options and fills a request with them.
func (w *wireOptions) check(chat bool) (*request, *apiError) {
	r := &request{MaxTokens: -1, Sampling: sampler.Sampling{Temperature: 1, TopP: 1}}
	if w.Model == nil || *w.Model == "" {
		return nil, badRequest("model", "model is required (GET /v1/models lists them)")
	}
	r.Model = *w.Model
	if w.ReturnTokenIDs != nil {
		r.ReturnIDs = *w.ReturnTokenIDs
	}
	e := w.streaming(r)
	if e == nil {
		e = w.budget(r, chat)
	}
	if e == nil {
		e = w.sampling(r)
	}
	if e == nil {
		e = w.choices(r, chat)
	}
	if e == nil {
		r.Stop, e = decodeStop(w.Stop)
	}
	if e != nil {
		return nil, e
	}
	return r, nil
}

// streaming reads stream and stream_options.
func (w *wireOptions) streaming(r *request) *apiError {
	if w.Stream != nil {
		r.Stream = *w.Stream
	}
	if w.StreamOptions == nil || !r.Stream {
		return nil
	}
	var so struct {
		IncludeUsage bool `json:"include_usage"`
	}
	if err := json.Unmarshal(*w.StreamOptions, &so); err != nil && !bytes.Equal(bytes.TrimSpace(*w.StreamOptions), []byte("null")) {
		return badRequest("stream_options", "stream_options must be an object: %v", err)
	}
	r.IncludeUsage = so.IncludeUsage
	return nil
}

// budget reads max_tokens, or a chat's max_completion_tokens (which wins).
func (w *wireOptions) budget(r *request, chat bool) *apiError {
	mt, param := w.MaxTokens, "max_tokens"
	if chat && w.MaxCompletionTokens != nil {
		mt, param = w.MaxCompletionTokens, "max_completion_tokens"
	}
	if mt == nil {
		return nil
	}
	if *mt < 1 { // OpenAI refuses 0 too: a reply of no tokens
		ae := badRequest(param, "%s is %d; it must be at least 1", param, *mt)
		ae.Code = "integer_below_min_value"
		return ae
	}
	r.MaxTokens = *mt
	return nil
}

// sampling reads temperature, top_p, top_k and seed.
func (w *wireOptions) sampling(r *request) *apiError {
	if t := w.Temperature; t != nil {
		if math.IsNaN(*t) || *t < 0 || *t > 2 {
			return badRequest("temperature", "temperature is %v; it must be in [0, 2]", *t)
		}
		r.Sampling.Temperature = *t
	}
	if p := w.TopP; p != nil {
		if math.IsNaN(*p) || *p <= 0 || *p > 1 {
			return badRequest("top_p", "top_p is %v; it must be in (0, 1]", *p)
		}
		r.Sampling.TopP = *p
	}
	if k := w.TopK; k != nil {
		if *k < 0 {
			return badRequest("top_k", "top_k is %d; it must be ≥ 0 (0 = all)", *k)
		}
		r.Sampling.TopK = *k
	}
	if w.Seed != nil {
		r.Sampling.Seed = uint64(*w.Seed)
	}
	return nil
}

// choices reads n, and logprobs with top_logprobs (chat: a boolean and
// 0–20; completions: logprobs is the number of top tokens, 0–20).
func (w *wireOptions) choices(r *request, chat bool) *apiError {
	r.N = 1
	if w.N != nil {
		if *w.N < 1 || *w.N > maxN {
			return badRequest("n", "n is %d; it must be 1 to %d (choices are generated one after another)", *w.N, maxN)
		}
		r.N = *w.N
	}
	lp := bytes.TrimSpace(w.Logprobs)
	given := len(lp) > 0 && !bytes.Equal(lp, []byte("null"))
	if chat {
		return w.chatLogprobs(r, lp, given)
	}
	if w.TopLogprobs != nil {
		return badRequest("top_logprobs", "top_logprobs is a chat field; a completion's logprobs is the number of top tokens")
	}
	if given {
		var n int
		if json.Unmarshal(lp, &n) != nil || n < 0 || n > inference.MaxTopLogprobs {
			return badRequest("logprobs", "logprobs must be an integer from 0 to %d (the top tokens returned with each token's)", inference.MaxTopLogprobs)
		}
		r.Logprobs, r.TopLogprobs = true, n
	}
	return nil
}

// chatLogprobs reads a chat's logprobs (a boolean) and top_logprobs.
func (w *wireOptions) chatLogprobs(r *request, lp []byte, given bool) *apiError {
	if given && json.Unmarshal(lp, &r.Logprobs) != nil {
		return badRequest("logprobs", "logprobs must be a boolean")
	}
	if w.TopLogprobs == nil {
		return nil
	}
	if *w.TopLogprobs < 0 || *w.TopLogprobs > inference.MaxTopLogprobs {
		return badRequest("top_logprobs", "top_logprobs is %d; it must be 0 to %d", *w.TopLogprobs, inference.MaxTopLogprobs)
	}
	if *w.TopLogprobs > 0 && !r.Logprobs {
		return badRequest("top_logprobs", "top_logprobs needs logprobs: true")
	}
	r.TopLogprobs = *w.TopLogprobs
	return nil
}

// decodeStop reads stop: a string, or an array of up to four strings.
func decodeStop(raw json.RawMessage) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var one string
	var many []string
	if err := json.Unmarshal(raw, &one); err == nil {
		many = []string{one}
	} else if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest("stop", "stop must be a string or an array of strings")
	}
	if len(many) > maxStops {
		return nil, badRequest("stop", "stop has %d sequences; at most %d", len(many), maxStops)
	}
	var out []string
	for i, s := range many {
		if len(s) > maxStopLen {
			return nil, badRequest("stop", "stop[%d] is %d bytes; at most %d", i, len(s), maxStopLen)
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// clip shortens a client's string for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
