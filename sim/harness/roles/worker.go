package roles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/client"
	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/servers"
	"github.com/connlab/connlab/sim/harness/wire"
)

// workerMain is a worker process: a config line, then jobs, on stdin;
// events and "done" lines on stdout. It returns when stdin ends or a job
// says exit, after the requests in hand.
func workerMain(stdin io.Reader, stdout io.Writer) error {
	out := wire.NewWriter(stdout)
	lr := wire.NewReader(stdin)
	first, err := lr.Next()
	if err != nil {
		return err
	}
	var cfg wire.WorkerConfig
	if err := json.Unmarshal(first.Config, &cfg); err != nil {
		return fmt.Errorf("harness: worker: bad config: %v", err)
	}
	w, err := client.NewWorker(cfg, func(e *sim.Event) { out.Event(e) })
	if err != nil {
		out.Send(&wire.Msg{Error: err.Error()})
		return err
	}
	if cfg.Warm != nil {
		if err := warmUp(cfg); err != nil {
			out.Send(&wire.Msg{Error: err.Error()})
			return err
		}
	}
	w.OpenPools()
	settle(0)
	if cfg.Nice {
		kernel.RaisePriority()
	}
	if err := out.Send(&wire.Msg{Ready: true}); err != nil {
		return err
	}
	linger, started := false, false
	ctx := context.Background()
	var wg sync.WaitGroup
	for {
		m, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if m.Job == nil {
			continue
		}
		j := m.Job
		if !started {
			netem.TakeLag() // the run starts: what came before is not its
			started = true
		}
		w.SetBase(j.T0)
		if j.Exit {
			linger = j.Linger
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if j.At != 0 {
				netem.SleepUntil(wire.WallTime(j.At)) // the request arrives now
			}
			failed := w.Serve(ctx, j.Req)
			lag := netem.TakeLag()
			out.Send(&wire.Msg{Done: j.Req, Fail: failed, End: time.Now().UnixNano(), LagUS: lag.Max.Microseconds(), Late: lag.Late,
				WriteLagUS: lag.WriteMax.Microseconds(), LateWrites: lag.LateWrites})
		}()
	}
	wg.Wait()
	if cfg.Nice {
		kernel.LowerPriority() // it winds down behind the requests of the others
	}
	w.Exit()
	err = out.Flush()
	for linger {
		if _, e := lr.Next(); e != nil {
			break // stdin ended: the run is over
		}
	}
	return err
}

// warmUp runs a few calls of the worker's kind against a private server in
// this process, with no delay, before the worker says it is ready. A fresh
// process pays for its first TLS handshake, HTTP exchange or Redis command
// with page faults and lazy initialisation; a worker that has served for a while (PHP-FPM's) does not, and neither does
// the model. The private server and clients are dropped afterwards: no
// connection, session or DNS answer carries over.
func warmUp(cfg wire.WorkerConfig) error {
	s := cfg.Scenario
	s.RTT, s.DNS, s.ServerTime, s.ServerConnTime, s.AppTime = 0, 0, 0, 0, 0
	s.KeepaliveTimeout, s.Reuse = 0, sim.ReuseRequest
	wc := wire.WorkerConfig{Setup: cfg.Setup, Scenario: s, Worker: cfg.Worker, CAPEM: cfg.Warm.CAPEM}
	switch cfg.Setup {
	case sim.SetupHTTP:
		up, err := servers.StartUpstream("", servers.ConfigFor(&s, 0, servers.OwnClients), cfg.Warm, nil)
		if err != nil {
			return err
		}
		defer up.Close()
		wc.Upstream = up.Addr()
		if cfg.DNS != "" { // the lookups too: a process's first one is slow
			d, err := servers.StartDNS("", 0)
			if err != nil {
				return err
			}
			defer d.Close()
			wc.DNS = d.Addr
		}
	case sim.SetupRedis:
		r, err := servers.StartRedis(false, 0, "")
		if err != nil {
			return err
		}
		defer r.Close()
		wc.Redis = r.Addr
	default:
		return nil
	}
	w, err := client.NewWorker(wc, func(*sim.Event) {})
	if err != nil {
		return err
	}
	for i := range 3 {
		if cfg.Setup == sim.SetupRedis {
			w.Serve(context.Background(), i+1)
			continue
		}
		h := w.NewHTTPClient()
		for n := 1; n <= 2; n++ {
			if e := w.HTTPCall(context.Background(), h, h, h, i+1, n, nil); e.Error != "" {
				return fmt.Errorf("harness: worker warm-up: %s", e.Error)
			}
		}
		h.CloseIdle(sim.ReasonWarmUp)
	}
	return nil
}
