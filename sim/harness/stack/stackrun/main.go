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
	nginxW := flag.Int("nginx-workers", 2, "nginx worker_processes")
	gw := flag.Int("gunicorn-workers", 1, "gunicorn --workers")
	gt := flag.Int("gunicorn-threads", 8, "gunicorn --threads")
	gka := flag.Int("gunicorn-keepalive", 2, "gunicorn --keep-alive seconds")
	ports := flag.String("port-range", "10000 65535", "ip_local_port_range in the namespace, above the stack's listening ports (\"\": the kernel's)")
	twr := flag.Int("tw-reuse", 0, "tcp_tw_reuse in the namespace (-1: the kernel's default)")
	repeat := flag.Int("repeat", 1, "rounds over every combination (interleaved)")
	out := flag.String("o", "", "write the JSON here (default: stdout)")
	quiet := flag.Float64("quiet", 0, "before each run, wait until the 1-minute load average is below this (0: do not wait)")
	quietMax := flag.Duration("quiet-max", 10*time.Minute, "wait at most this long for -quiet")
	flag.Parse()

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
							specs = append(specs, stack.Spec{
								Name: name,
								Config: stack.Config{AppServer: app, Redis: rd, Keepalive: k, NginxWorkers: *nginxW,
									GunicornWorkers: *gw, GunicornThreads: *gt, GunicornKeepalive: *gka},
								Load:      stack.Load{Kind: ld, Concurrency: n, KeepAlive: keep},
								Warmup:    *warm,
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
	rec.Sysctl = map[string]string{"ip_local_port_range": *ports, "tcp_tw_reuse": strconv.Itoa(*twr)}
	for i, sp := range specs {
		if *quiet > 0 {
			waitQuiet(ctx, *quiet, *quietMax)
		}
		res, err := stack.RunIsolated(ctx, sp)
		if err != nil {
			fmt.Fprintf(os.Stderr, "stackrun: %v\n", err)
			os.Exit(1)
		}
		rec.Runs = append(rec.Runs, res)
		fmt.Fprintf(os.Stderr, "[%d/%d] %s\n", i+1, len(specs), stack.Line(res))
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	check(err)
	b = append(b, '\n')
	if *out == "" {
		os.Stdout.Write(b)
		return
	}
	check(os.WriteFile(*out, b, 0o644))
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
