package cli

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/connlab/connlab/sim/loopback"
	"github.com/connlab/connlab/sim/server"
)

// serveReal runs blocks on real servers for `sim serve` (serve_real.go);
// while it is nil, real runs are answered with an error.
var serveReal server.RealFunc

// serveTare measures the harness's own overhead for real runs' comparisons
// (serve_real.go); nil without the harness.
var serveTare func(ctx context.Context, rtt time.Duration) (time.Duration, error)

func init() {
	register(&command{
		name:    "serve",
		summary: "serve the built site and stream the lab pages' runs to their widgets (/ws)",
		usage:   "[--addr 127.0.0.1:8080] [--public DIR] [--labs DIR,...]",
		example: `  make site && sim serve            # then open http://127.0.0.1:8080/
  sim serve --addr 127.0.0.1:9000 --public public --labs labs,content

It binds to loopback only; --allow-non-loopback lets --addr name another
address (and binds only there). Ctrl-C stops it, ending every run.`,
		run: serveCmd,
	})
}

func serveCmd(ctx context.Context, env *Env, args []string) error {
	c := find("serve")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen on this `host:port` (port 0 picks a free one)")
	public := fs.String("public", "public", "the built site's `DIR` (make site writes it)")
	labs := fs.String("labs", "labs,content", "comma-separated `DIRS` whose pages hold ```sim blocks")
	remote := fs.Bool("allow-non-loopback", false, "let --addr be an address other than loopback (the site and its runs are then reachable from elsewhere)")
	for _, ext := range serveExtensions {
		ext.flags(fs)
	}
	pos, err := parse(c, env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{"takes no arguments"}
	}
	loopback, err := checkAddr(*addr, *remote)
	if err != nil {
		return usageError{err.Error()}
	}
	var dirs []string
	for _, d := range strings.Split(*labs, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	logf := func(format string, args ...any) { fmt.Fprintf(env.Stderr, format+"\n", args...) }
	srv := server.New(server.Options{
		Public:        *public,
		Labs:          dirs,
		Real:          serveReal,
		Tare:          serveTare,
		LoopbackHosts: loopback,
		Logf:          logf,
	})
	defer srv.Close()
	for _, ext := range serveExtensions {
		if err := ext.mount(srv.Mux(), env, dirs); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(*public); err != nil || !fi.IsDir() {
		logf("sim serve: %s does not exist: run `make site` first (pages answer 503 until then; /ws works)", *public)
	}
	real := "real runs: not available in this build"
	if serveReal != nil {
		real = "real runs: one at a time"
	}
	fmt.Fprintf(env.Stdout, "sim serve: http://%s/  (site %s, %d pages with blocks in %s; %s; Ctrl-C stops)\n",
		ln.Addr(), *public, srv.Pages, strings.Join(dirs, ", "), real)
	err = srv.Serve(ctx, ln)
	if err == nil && ctx.Err() != nil {
		fmt.Fprintln(env.Stdout, "sim serve: stopped")
	}
	return err
}

// checkAddr refuses an address that is not loopback unless allowed, and
// says whether it is loopback.
func checkAddr(addr string, allowRemote bool) (isLoopback bool, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--addr %q: want host:port, e.g. 127.0.0.1:8080", addr)
	}
	if loopback.IsHost(addr) {
		return true, nil
	}
	if allowRemote {
		return false, nil
	}
	what := fmt.Sprintf("%q is not a loopback address", host)
	if host == "" {
		what = "an empty host listens on every interface"
	}
	return false, fmt.Errorf("--addr %s: %s; sim serve binds to 127.0.0.1 or ::1 (add --allow-non-loopback to bind there anyway)", addr, what)
}
