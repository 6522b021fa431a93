package harness

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/connlab/connlab/sim/lab"
)

// MaxTare caps the harness overhead that Validate adds to a variant's
// tolerance for each round trip of a phase (Tolerance.PerTrip): the
// accuracy the emulated path promises, 0.3 ms per round trip. A machine
// that needs more cannot validate to that accuracy, and the comparison says
// so by failing: a busy one, or one whose idle CPUs wake late (on a
// virtual machine the tare has been larger idle than busy).
const MaxTare = 300 * time.Microsecond

// tareSrc is the calibration block: reused HTTPS calls with no server
// work, no lookup and a small response, so that a call is one round trip
// in the model and whatever the real call takes beyond it is the
// harness's own (scheduling, wake-ups, TLS and HTTP code).
const tareSrc = "```sim {id=\"tare\"}\n" + `title = "Harness overhead of a reused call"
workers = 1
requests = 10
rtt = "%sms"
dns = "0s"
tls = "1.3"
server_time = "0s"
response_bytes = 200
reuse = "process"
` + "```\n"

type tareKey struct {
	rtt        time.Duration
	exe, isol  string
	compressed float64
}

var tares sync.Map // tareKey → time.Duration

// Tare measures what the harness itself adds to a reused call at rtt on
// this machine: the median total of the calibration block's reused calls
// less the model's (the RTT), mostly threads that sleep through the round
// trip and wake up late. Measured once per RTT and process.
func Tare(ctx context.Context, rtt time.Duration, opt Options) (time.Duration, error) {
	key := tareKey{rtt, opt.Executable, opt.Isolation, opt.Compress}
	if v, ok := tares.Load(key); ok {
		return v.(time.Duration), nil
	}
	ms := strconv.FormatFloat(float64(rtt)/1e6, 'f', -1, 64)
	l, err := lab.Parse("harness calibration", []byte(fmt.Sprintf(tareSrc, ms)))
	if err != nil {
		return 0, err
	}
	copt := Options{Seed: 1, Executable: opt.Executable, Isolation: opt.Isolation, Compress: opt.Compress}
	p, err := NewPlan(ctx, l.Blocks[0], copt)
	if err != nil {
		return 0, err
	}
	run, err := RunPlan(ctx, p, copt)
	if err != nil {
		return 0, fmt.Errorf("harness calibration at %s RTT: %w", rtt, err)
	}
	model, err := run.Model(ctx, 1, nil)
	if err != nil {
		return 0, err
	}
	mv, rv := model.Variants[0].Summary, run.Result.Variants[0].Summary
	if mv == nil || rv == nil || rv.Reused == 0 {
		return 0, fmt.Errorf("harness calibration at %s RTT: no reused call measured", rtt)
	}
	d := time.Duration(math.Round((rv.ReusedTotal.P50 - mv.ReusedTotal.P50) * 1e6))
	d = max(d, 0)
	tares.Store(key, d)
	return d, nil
}
