//go:build linux

// Command stackrun measures the real stack (package stack) for every
// combination of the values given, each run in namespaces of its own, and
// writes the results with the software versions and the machine as JSON.
//
//	go build -o /tmp/stackrun ./sim/harness/stack/stackrun
//	/tmp/stackrun -app gunicorn,flask -redis new,pool -keepalive 0,32 -load go,siege -o runs.json
//
// It needs root (a private network namespace) and Debian's nginx-light,
// redis-server, gunicorn, python3-flask, python3-redis and siege.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/connlab/connlab/sim/harness/stack"
)

func main() {
	stack.ChildMain()
	apps := flag.String("app", "gunicorn,flask", "app servers: gunicorn, flask")
	redises := flag.String("redis", "new,pool", "redis-py use: new (a connection per request), pool")
	kas := flag.String("keepalive", "0,32", "nginx upstream keepalive N values (0: off)")
	loads := flag.String("load", "go", "load generators: go, siege")
	conc := flag.String("c", "25", "concurrency values")
	clientKA := flag.String("client-keepalive", "auto", "clients keep their connection to nginx: true, false, or auto (go: true, siege: false, its default)")
	dur := flag.Duration("d", 10*time.Second, "measured window")
	warm := flag.Duration("warmup", 2*time.Second, "warm-up before the window")
	calib := flag.Duration("calibrate", 0, "a calibration window besides the measured one (Go load only; 0: none)")
	slice := flag.Duration("slice", 0, "interleave the calibration and measured windows in slices this long (0: calibration first)")
	nginxW := flag.Int("nginx-workers", 2, "nginx worker_processes")
	gw := flag.Int("gunicorn-workers", 1, "gunicorn --workers")
	gt := flag.Int("gunicorn-threads", 8, "gunicorn --threads")
	gka := flag.Int("gunicorn-keepalive", 2, "gunicorn --keep-alive seconds")
	ports := flag.String("port-range", "10000 65535", "ip_local_port_range in the namespace, above the stack's listening ports (\"\": the kernel's)")
	twr := flag.Int("tw-reuse", 0, "tcp_tw_reuse in the namespace (-1: the kernel's default)")
	repeat := flag.Int("repeat", 1, "rounds over every combination (interleaved)")
	out := flag.String("o", "", "write the JSON here (default: stdout)")
	appendTo := flag.Bool("append", false, "with -o, add the runs to the record already in that file (same software versions)")
	quiet := flag.Float64("quiet", 0, "before each run, wait until the 1-minute load average is below this (0: do not wait)")
	quietMax := flag.Duration("quiet-max", 10*time.Minute, "wait at most this long for -quiet")
	tag := flag.String("tag", "", "a batch label added to each run's name (\"/TAG\")")
	fit := flag.Bool("fit", false, "fit each app server's costs over the calibration windows of the records named as arguments (stack.Calibrate), print them as JSON, and run nothing")
	merge := flag.Bool("merge", false, "merge the records named as arguments (same software versions) into -o, and run nothing")
	flag.Parse()
	if *merge {
		check(mergeRecords(*out, flag.Args()))
		return
	}
	if *fit {
		check(fitRecords(flag.Args()))
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var specs []stack.Spec
	for r := 0; r < *repeat; r++ {
		for _, c := range split(*conc) {
			n, err := strconv.Atoi(c)
			check(err)
			for _, ld := range split(*loads) {
				for _, app := range split(*apps) {
					for _, ka := range split(*kas) {
						k, err := strconv.Atoi(ka)
						check(err)
						for _, rd := range split(*redises) {
							keep := ld == stack.LoadGo
							if *clientKA != "auto" {
								keep, err = strconv.ParseBool(*clientKA)
								check(err)
							}
							name := fmt.Sprintf("%s/ka%d/%s/%s-c%d", app, k, rd, ld, n)
							if *ports == "" {
								name += "/kernel-defaults"
							}
							if *tag != "" {
								name += "/" + *tag
							}
							specs = append(specs, stack.Spec{
								Name: name,
								Config: stack.Config{AppServer: app, Redis: rd, Keepalive: k, NginxWorkers: *nginxW,
									GunicornWorkers: *gw, GunicornThreads: *gt, GunicornKeepalive: *gka},
								Load:      stack.Load{Kind: ld, Concurrency: n, KeepAlive: keep},
								Warmup:    *warm,
								Calibrate: *calib,
								Slice:     *slice,
								Duration:  *dur,
								PortRange: *ports, TWReuse: *twr,
							})
						}
					}
				}
			}
		}
	}
	if miss := stack.Missing(stack.Config{AppServer: stack.Gunicorn}, strings.Contains(*loads, "siege")); len(miss) > 0 {
		fmt.Fprintf(os.Stderr, "stackrun: install the Debian packages %s\n", strings.Join(miss, ", "))
		os.Exit(2)
	}
	rec := stack.NewRecord()
	if *appendTo && *out != "" {
		old, err := readRecord(*out)
		check(err)
		if old != nil {
			for k, v := range rec.Software {
				if old.Software[k] != v {
					check(fmt.Errorf("%s: recorded with %s %s, installed %s", *out, k, old.Software[k], v))
				}
			}
			rec.Recorded, rec.Runs = old.Recorded, old.Runs
		}
	}
	failed := 0
	for i, sp := range specs {
		if ctx.Err() != nil {
			break
		}
		if *quiet > 0 {
			waitQuiet(ctx, *quiet, *quietMax)
		}
		res, err := stack.RunIsolated(ctx, sp)
		if err != nil {
			// One failed run (a program that would not start on a busy
			// machine) does not lose the others.
			fmt.Fprintf(os.Stderr, "[%d/%d] %s: %v\n", i+1, len(specs), sp.Name, err)
			failed++
			continue
		}
		rec.Runs = append(rec.Runs, res)
		fmt.Fprintf(os.Stderr, "[%d/%d] %s\n", i+1, len(specs), stack.Line(res))
	}
	b, err := rec.MarshalIndent()
	check(err)
	if *out == "" {
		os.Stdout.Write(b)
	} else {
		check(os.WriteFile(*out, b, 0o644))
	}
	if failed > 0 || ctx.Err() != nil {
		os.Exit(1)
	}
}

// waitQuiet waits until the 1-minute load average is below limit, at
// most max: the machine is shared, and other programs' work slows the
// stack's.
func waitQuiet(ctx context.Context, limit float64, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		b, err := os.ReadFile("/proc/loadavg")
		if err != nil {
			return
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			if la, err := strconv.ParseFloat(f[0], 64); err == nil && la < limit {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// mergeRecords writes to out the runs of every record in files, which must
// have been made with the same software.
func mergeRecords(out string, files []string) error {
	if out == "" || len(files) == 0 {
		return fmt.Errorf("-merge needs -o FILE and the records to merge")
	}
	var all *stack.Record
	for _, f := range files {
		r, err := readRecord(f)
		if err != nil {
			return err
		}
		if r == nil {
			return fmt.Errorf("%s: no such file", f)
		}
		if all == nil {
			all = r
			continue
		}
		for k, v := range r.Software {
			if all.Software[k] != v {
				return fmt.Errorf("%s: %s %s, but %s has %s", f, k, v, files[0], all.Software[k])
			}
		}
		all.Runs = append(all.Runs, r.Runs...)
	}
	b, err := all.MarshalIndent()
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// readRecord reads a record written before (nil if the file is absent).
func readRecord(path string) (*stack.Record, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r stack.Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func check(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "stackrun: %v\n", err)
		os.Exit(2)
	}
}

// fitRecords prints, per app server, the costs fitted over the calibration
// windows of the runs in the records named.
func fitRecords(files []string) error {
	windows := map[string][]*stack.Result{}
	for _, f := range files {
		r, err := readRecord(f)
		if err != nil {
			return err
		}
		if r == nil {
			return fmt.Errorf("%s: no record", f)
		}
		for _, run := range r.Runs {
			if run.Calibration != nil {
				windows[run.AppServer] = append(windows[run.AppServer], run.Calibration)
			}
		}
	}
	out := map[string]*stack.Costs{}
	for app, ws := range windows {
		c, err := stack.Calibrate(ws)
		if err != nil {
			return err
		}
		out[app] = c
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}
