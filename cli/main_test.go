package cli

import (
	"os"
	"testing"

	"etchat/internal/engines"
)

// The CLI's tests run with the engines main registers.
func TestMain(m *testing.M) {
	engines.Register()
	os.Exit(m.Run())
}
