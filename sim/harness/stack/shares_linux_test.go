package stack

import (
	"slices"
	"testing"
)

// TestWorkerShares: each worker process's part of its tier's run time
// over a window, from its threads' readings at the window's edges; the
// master is left out, a thread born in the window counts from zero, and a
// tier of one process gives none.
func TestWorkerShares(t *testing.T) {
	before := map[int]schedStat{
		10: {pid: 1, run: 5e6},  // the master
		11: {pid: 2, run: 1e6},  // worker 2's main thread
		12: {pid: 2, run: 2e6},  // and another of its threads
		13: {pid: 3, run: 40e6}, // worker 3, idle in the window
	}
	now := map[int]schedStat{
		10: {pid: 1, run: 9e6},
		11: {pid: 2, run: 4e6},
		12: {pid: 2, run: 5e6},
		13: {pid: 3, run: 40e6},
		14: {pid: 4, run: 2e6}, // worker 4's thread, born in the window
	}
	run := map[int]int64{}
	workerRun(run, before, now, 1)
	if run[2] != 6e6 || run[3] != 0 || run[4] != 2e6 || len(run) != 3 {
		t.Fatalf("run by process %v", run)
	}
	if got, want := shares(run), []float64{0.75, 0.25, 0}; !slices.Equal(got, want) {
		t.Errorf("shares %v, want %v", got, want)
	}
	if got := shares(map[int]int64{2: 5}); got != nil {
		t.Errorf("one process: %v", got)
	}
	if got := shares(map[int]int64{2: 0, 3: 0}); got != nil {
		t.Errorf("no run time: %v", got)
	}
}
