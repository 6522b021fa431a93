// Package testutil holds helpers that the tests of several packages share.
package testutil

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
)

// SyncBuffer is a bytes.Buffer that a server's goroutines may write while
// a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Median of xs: the middle value, or the mean of the two middle ones (NaN
// for none). Tests quote medians, as other work on a shared machine makes
// some runs much slower and a mean would follow them.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

var (
	simOnce sync.Once
	simDir  string
	simPath string
	simErr  error
)

// SimBinary builds the sim command once per test binary, without the race
// detector (the model's runs are ten times slower under it), and returns
// its path; CONNLAB_SIM_BIN names one to use instead. RemoveSimBinary,
// from TestMain, removes what it built.
func SimBinary() (string, error) {
	simOnce.Do(func() {
		if p := os.Getenv("CONNLAB_SIM_BIN"); p != "" {
			simPath = p
			return
		}
		if simDir, simErr = os.MkdirTemp("", "connlab-sim-bin-"); simErr != nil {
			return
		}
		simPath = filepath.Join(simDir, "sim")
		goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goBin); err != nil {
			goBin = "go"
		}
		if out, err := exec.Command(goBin, "build", "-o", simPath, "github.com/connlab/connlab/sim/cmd/sim").CombinedOutput(); err != nil {
			simErr = fmt.Errorf("go build sim/cmd/sim: %v\n%s", err, out)
		}
	})
	return simPath, simErr
}

// RemoveSimBinary removes the folder SimBinary built in, if any.
func RemoveSimBinary() {
	if simDir != "" {
		os.RemoveAll(simDir)
	}
}
