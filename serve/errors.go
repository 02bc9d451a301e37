package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// apiError is an error in OpenAI's shape with its HTTP status; clients
// (the openai packages) turn the status into their typed errors.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param,omitempty"`
	Code    string `json:"code,omitempty"`
	// RetryAfter is sent as Retry-After, in whole seconds (429).
	RetryAfter time.Duration `json:"-"`
}

func (e *apiError) Error() string { return e.Message }

// MarshalJSON writes param and code as null when they are empty, as
// OpenAI does: clients read both keys.
func (e *apiError) MarshalJSON() ([]byte, error) {
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	return json.Marshal(map[string]any{"message": e.Message, "type": e.Type, "param": orNull(e.Param), "code": orNull(e.Code)})
}

// badRequest is a 400 naming the field at fault.
func badRequest(param, format string, a ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Message: fmt.Sprintf(format, a...)}
}

func notFound(model string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("the model %q does not exist; GET /v1/models lists the models served", model)}
}

func unauthorized(msg string) *apiError {
	return &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key", Message: msg}
}

func busy(retry time.Duration, msg string) *apiError {
	return &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded", Message: msg, RetryAfter: max(time.Millisecond, retry)}
}

func serverError(err error) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
}

func unavailable(msg string) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Message: msg}
}

// writeError sends e as {"error": {...}}.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		// Retry-After takes whole seconds: the estimate rounded up, at
		// least 1. (A finer Retry-After-Ms, which the openai clients read
		// first, was tried: 64 clients retrying every few milliseconds
		// took 2.5× longer than with 1 s, the refusals crowding out the
		// generation on two cores.)
		h.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(e.RetryAfter.Seconds())))))
	}
	if e.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="etchat"`)
	}
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}
