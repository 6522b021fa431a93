package cli

import (
	"os"
	"testing"

	"github.com/connlab/connlab/sim/harness/roles"
)

// TestMain lets this test binary play the harness's lab and worker
// processes: the real runs of validate's and serve's tests re-execute it.
func TestMain(m *testing.M) {
	if code, ok := roles.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
