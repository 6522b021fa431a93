package cli

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/class"
	"github.com/connlab/connlab/sim/harness"
	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/loopback"
	"github.com/connlab/connlab/sim/server"
	"github.com/connlab/connlab/sim/web"
)

func serveCommand() *command {
	return &command{
		name:    "serve",
		summary: "serve the built site and stream the lab pages' runs to their widgets (/ws); --class runs a class",
		usage:   "[--addr 127.0.0.1:8080] [--public DIR] [--labs DIR,...] [--class [--class-seed N|random] [--class-code CODE] ...]",
		example: `  make site && sim serve            # then open http://127.0.0.1:8080/
  sim serve --addr 127.0.0.1:9000 --public public --labs labs,content
  sim serve --class --addr 0.0.0.0:8080 --allow-non-loopback   # a class on the room's network

It binds to loopback only; --allow-non-loopback lets --addr name another
address (and binds only there). Ctrl-C stops it, ending every run.

With --class, students open /class/ and type the join code shown on the
teacher's page (or follow its link); each machine may join --class-per-address
students. A machine is what its address tells: every loopback address is
this one machine, an IPv4 address is its own, an IPv6 address counts by its
/64 unless it is on the server's own link. A machine that sends 10 wrong
join codes in a minute waits a minute; once the class has taken 60 in a
minute, new students wait until fewer came in the last minute (students who
joined stay; the teacher's page shows the count). The labs' data files
(labs/NAME.<hash>.json, which hold every exercise whole) are served without
their exercises; the built pages' source still holds the answers of the
labs' own numbers (the teacher's page says which).`,
		run: serveCmd,
	}
}

// serveCmd assembles sim serve: one index of the pages, the runs' server
// (/ws, /api/params, the site) with real runs through the harness, and the
// exercises (/exercise/api) with class mode (/class/...) on its mux, and
// /api/server.json, which tells a page that a server answers.
func serveCmd(ctx context.Context, env *Env, args []string) error {
	c := find("serve")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen on this `host:port` (port 0 picks a free one)")
	public := fs.String("public", "public", "the built site's `DIR` (make site writes it)")
	labs := fs.String("labs", "labs,content", "comma-separated `DIRS` whose pages hold ```sim blocks")
	remote := fs.Bool("allow-non-loopback", false, "let --addr be an address other than loopback (the site and its runs are then reachable from elsewhere)")
	classOn := fs.Bool("class", false, "class mode: students join with a name and the join code, their predictions stream to the teacher's page (/class/teacher, its address is printed), the teacher reveals")
	classSeed := fs.String("class-seed", "random", "class mode: the `seed` every student gets: a number (0: the labs' own numbers, as the pages and printed worksheets show them) or random")
	classPerStudent := fs.Bool("class-per-student", false, "class mode: give each student a seed of their own (histograms then show predictions as % of each student's answer)")
	classToken := fs.String("class-token", "", "class mode: the teacher page's `token` (default: a random one)")
	classCode := fs.String("class-code", "", "class mode: the join `code` students type (4 to 16 letters and digits; default: a random one the teacher's page shows)")
	classMax := fs.Int("class-max", class.DefaultLimits.MaxStudents, "class mode: most students who may join")
	classPerAddr := fs.Int("class-per-address", class.DefaultLimits.PerAddress, "class mode: most students who may join from one machine (every loopback address is one; an IPv6 address outside the server's /64 counts by its /64)")
	pos, err := parse(c, env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{"takes no arguments"}
	}
	isLoopback, err := checkAddr(*addr, *remote)
	if err != nil {
		return usageError{err.Error()}
	}
	var classOpt class.Options
	if *classOn {
		if classOpt, err = classOptions(*classSeed, *classPerStudent, *classToken, *classCode, *classMax, *classPerAddr); err != nil {
			return err
		}
	}
	var dirs []string
	for _, d := range strings.Split(*labs, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	logf := func(format string, args ...any) { fmt.Fprintf(env.Stderr, format+"\n", args...) }

	index := web.NewIndex(dirs, func(f string, a ...any) { logf("sim serve: "+f, a...) })
	srv := server.New(server.Options{
		Public:        *public,
		Labs:          dirs,
		Index:         index,
		Real:          realRun,
		Tare:          realTare,
		LoopbackHosts: isLoopback,
		Logf:          logf,
	})
	defer srv.Close()
	cat, err := class.LoadCatalog(index)
	if err != nil {
		return err
	}
	mux := srv.Mux()
	var cs *class.Server
	if *classOn {
		if cat.Count() == 0 {
			return fmt.Errorf("--class: no lab in %s has exercises", strings.Join(dirs, ", "))
		}
		classOpt.Catalog, classOpt.Logf = cat, logf
		if cs, err = class.New(classOpt); err != nil {
			return err
		}
		defer cs.Close()
		mux.Handle("GET /exercise/api", cat.APIHandler(func() bool { return true }))
		cs.Mount(mux)
	} else {
		mux.Handle("GET /exercise/api", cat.APIHandler(nil))
	}
	mux.Handle("GET /api/server.json", serverInfo(true, cs != nil))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(*public); err != nil || !fi.IsDir() {
		logf("sim serve: %s does not exist: run `make site` first (pages answer 503 until then; /ws works)", *public)
	}
	fmt.Fprintf(env.Stdout, "sim serve: http://%s/  (site %s, %d pages with blocks in %s; real runs: one at a time; Ctrl-C stops)\n",
		ln.Addr(), *public, srv.Pages, strings.Join(dirs, ", "))
	if cs != nil {
		numbers := fmt.Sprintf("seed %d for everyone (the key: sim exercise --key --seed %d FILE)", classOpt.Seed, classOpt.Seed)
		if classOpt.PerStudent {
			numbers = "a seed per student"
		}
		fmt.Fprintf(env.Stdout, "sim serve: class mode, %d exercises in %d labs, %s; students open %s (join code %s), the teacher's page is %s (keep its token to yourself)\n",
			cat.Count(), len(cat.Labs), numbers, cs.JoinPath(), cs.Code(), cs.TeacherPath())
	}
	err = srv.Serve(ctx, ln)
	if err == nil && ctx.Err() != nil {
		fmt.Fprintln(env.Stdout, "sim serve: stopped")
	}
	return err
}

// classOptions checks the class flags.
func classOptions(seedFlag string, perStudent bool, token, code string, maxStudents, perAddr int) (class.Options, error) {
	opt := class.Options{PerStudent: perStudent, Token: token, Code: code,
		Limits: class.Limits{MaxStudents: maxStudents, PerAddress: perAddr}}
	if seedFlag == "random" {
		opt.Seed = class.RandomSeed()
	} else {
		seed, err := class.ParseSeed(seedFlag)
		if err != nil {
			return opt, usageError{"--class-seed: " + err.Error() + " or random"}
		}
		opt.Seed = seed
	}
	if maxStudents < 1 || maxStudents > 10000 {
		return opt, usageError{"--class-max: want 1 to 10000"}
	}
	if perAddr < 1 || perAddr > 10000 {
		return opt, usageError{"--class-per-address: want 1 to 10000"}
	}
	if code != "" {
		if _, err := class.NormalizeCode(code); err != nil {
			return opt, usageError{"--class-code: " + err.Error()}
		}
	}
	return opt, nil
}

// realRun is the page's "Run real": the block on real loopback servers
// through the harness, with the real nginx and redis-server when they are
// installed; the server sets each phase beside the model by sim validate's
// rule (harness.ComparePhases).
func realRun(ctx context.Context, b *lab.Block, set []lab.Setting, variants []string, seed uint64, sink func(string, *sim.Event)) (*lab.BlockResult, error) {
	return harness.RunBlock(ctx, b, harness.Options{
		Set: set, Variants: variants, Seed: seed, Real: []string{"nginx", "redis"},
		Sink: func(_, variant string, e *sim.Event) { sink(variant, e) },
	})
}

// realTare measures the harness's own overhead for real runs' comparisons.
func realTare(ctx context.Context, rtt time.Duration) (time.Duration, error) {
	return harness.Tare(ctx, rtt, harness.Options{})
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
