package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// apiError is an error in OpenAI's shape with its HTTP status; clients
// (the openai packages) turn the status into their typed errors.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param,omitempty"`
	Code    string `json:"code,omitempty"`
	// RetryAfter, in seconds, is sent as Retry-After (429).
	RetryAfter int `json:"-"`
}

func (e *apiError) Error() string { return e.Message }

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

func busy(retry int, msg string) *apiError {
	return &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded", Message: msg, RetryAfter: max(1, retry)}
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
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}
