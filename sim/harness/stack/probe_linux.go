package stack

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// The CPU's speed. On a machine shared with other programs the CPU time a
// piece of work takes is not fixed: two hyper-threads of one core, caches
// and memory bandwidth are shared with whatever runs beside it, so the
// stack's CPU time per request moved by a fifth between windows seconds
// apart. The probe measures it: every 10 ms it does a fixed piece of work
// (a pseudo-random walk over a table a little larger than a core's L1
// cache, about 50 µs) and reads the CPU time its thread spent on it. The
// median over a window says how fast the CPU ran for the stack in that
// window; calibration and prediction divide and multiply by it.

// probeTable is walked by probeWork.
var probeTable = func() []uint32 {
	t := make([]uint32, 16384)
	x := uint32(2463534242)
	for i := range t {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		t[i] = x
	}
	return t
}()

// probeWork is the probe's fixed work; its result keeps it from being
// optimised away.
func probeWork() uint32 {
	var h uint32 = 2166136261
	i := uint32(0)
	for range 20000 {
		v := probeTable[i&uint32(len(probeTable)-1)]
		h = (h ^ v) * 16777619
		i = v + h>>7
	}
	return h
}

var probeSink uint32

// threadCPU returns the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// speedProbe samples the probe's CPU time into the current window.
type speedProbe struct {
	mu      sync.Mutex
	win     int
	samples [][]time.Duration
	cpu     time.Duration // the probe's own CPU time, all windows
}

func newSpeedProbe(windows int) *speedProbe {
	return &speedProbe{win: -1, samples: make([][]time.Duration, windows)}
}

func (p *speedProbe) setWindow(w int) { p.mu.Lock(); p.win = w; p.mu.Unlock() }

func (p *speedProbe) run(ctx context.Context, own *harnessCPU) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t0 := threadCPU()
		probeSink += probeWork()
		d := threadCPU() - t0
		own.add(d)
		p.mu.Lock()
		p.cpu += d
		if w := p.win; w >= 0 && w < len(p.samples) {
			p.samples[w] = append(p.samples[w], d)
		}
		p.mu.Unlock()
	}
}

// median returns window w's median probe time in microseconds (0: no
// sample).
func (p *speedProbe) median(w int) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := slices.Clone(p.samples[w])
	if len(s) == 0 {
		return 0
	}
	slices.Sort(s)
	return float64(s[len(s)/2].Nanoseconds()) / 1000
}
