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
// median over a window says how fast the CPU ran in that window. It is
// recorded, not used by the model: scaling the costs by it did not
// predict better than interleaving the calibration with the measurement.

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
	own.own()
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

// The load's stalls. A goroutine of the load's process sleeps 1 ms again
// and again; when it wakes up late, the process had no CPU (its threads
// were waiting behind other work) or the Go runtime was busy: the users'
// goroutines were held up as long. Lateness beyond stallMin counts as a
// stall; its lengths and how often they came describe the load's
// turnaround on a busy machine.
const stallMin = 200 * time.Microsecond

type stallProbe struct {
	mu     sync.Mutex
	win    int
	stalls [][]time.Duration
}

func newStallProbe(windows int) *stallProbe {
	return &stallProbe{win: -1, stalls: make([][]time.Duration, windows)}
}

func (p *stallProbe) setWindow(w int) { p.mu.Lock(); p.win = w; p.mu.Unlock() }

func (p *stallProbe) run(ctx context.Context) {
	for ctx.Err() == nil {
		t0 := time.Now()
		time.Sleep(time.Millisecond)
		late := time.Since(t0) - time.Millisecond
		if late < stallMin {
			continue
		}
		p.mu.Lock()
		if w := p.win; w >= 0 && w < len(p.stalls) {
			p.stalls[w] = append(p.stalls[w], late)
		}
		p.mu.Unlock()
	}
}

// summary returns window w's stalls: how many a second of the window's
// length, and their lengths' mean and percentiles in ms.
func (p *stallProbe) summary(w int, length time.Duration) (perS float64, ms map[string]float64) {
	p.mu.Lock()
	s := slices.Clone(p.stalls[w])
	p.mu.Unlock()
	if len(s) == 0 || length <= 0 {
		return 0, nil
	}
	slices.Sort(s)
	return float64(len(s)) / length.Seconds(), latencyStats(s)
}
