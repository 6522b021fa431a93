package harness

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/connlab/connlab/sim/lab"
)

// verdictSrc is a small block for the verdicts' real runs: ten reused
// HTTPS calls after one new connection.
const verdictSrc = "```sim {id=\"v\"}\n" + `workers = 1
requests = 12
rtt = "20ms"
dns = "0s"
tls = "1.3"
server_time = "1ms"
reuse = "process"
` + "```\n"

// spinners starts n busy loops that are not this process's descendants
// (their shell exits at once, so init adopts them): other programs, to the
// harness. It returns a function that stops them.
func spinners(t *testing.T, n int) (stop func()) {
	t.Helper()
	script := strings.Repeat("(while :; do :; done) >/dev/null 2>&1 & echo $!\n", n)
	out, err := exec.Command("sh", "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	stop = func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestVerdictsOnRealRuns: real runs of one block, with the model made wrong
// on purpose (Options.ModelSet) and with the machine made busy by two busy
// loops that are not the run's: a model wrong in time is inconclusive on
// a busy machine and disagrees on a quiet one; a model wrong in a count
// disagrees on a busy machine too, and so does one whose phases are slower
// than the real ones; a right one never disagrees. The quiet case decides
// from the run's measured share: when other programs happened to keep the
// machine busy, it is inconclusive as it should be, and says so.
func TestVerdictsOnRealRuns(t *testing.T) {
	l, err := lab.Parse("verdicts", []byte(verdictSrc))
	if err != nil {
		t.Fatal(err)
	}
	b := l.Blocks[0]
	run := func(name string, modelSet ...lab.Setting) *VariantComparison {
		t.Helper()
		opt := testOptions()
		opt.ModelSet = modelSet
		bv, err := Validate(context.Background(), b, opt, DefaultTolerance, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		vc := bv.Variants[0]
		t.Logf("%s: %s %s%s; share %v", name, vc.Verdict, vc.Inconclusive, vc.Why, vc.Share)
		return vc
	}
	quicker := lab.Setting{Key: "rtt", Value: "14ms"} // the model 30 % quicker than the real path
	slower := lab.Setting{Key: "rtt", Value: "26ms"}
	perCall := lab.Setting{Key: "reuse", Value: "none"} // a connection a call, where one is kept

	// Quiet first, before the busy loops.
	if vc := run("wrong in time, quiet", quicker); vc.Verdict != VerdictDisagree {
		if vc.Verdict == VerdictInconclusive && busyShare(vc.Share) != "" {
			t.Logf("the machine was busy without the test's loops: %s", vc.Inconclusive)
		} else {
			t.Errorf("wrong in time on a quiet machine: %s (%s), want disagree", vc.Verdict, vc.Inconclusive)
		}
	}

	stop := spinners(t, 2)
	defer stop()
	vc := run("wrong in time, busy", quicker)
	if busyShare(vc.Share) == "" {
		t.Fatalf("two busy loops beside the run: the share %v does not say the machine was busy", vc.Share)
	}
	if vc.Verdict != VerdictInconclusive || !strings.Contains(vc.Inconclusive, "machine busy: other programs used") {
		t.Errorf("wrong in time on a busy machine: %s (%s%s), want inconclusive", vc.Verdict, vc.Inconclusive, vc.Why)
	}
	if vc := run("wrong in a count, busy", perCall); vc.Verdict != VerdictDisagree || !strings.Contains(vc.Why, "connects") {
		t.Errorf("wrong in a count on a busy machine: %s (%s%s), want disagree on connects", vc.Verdict, vc.Inconclusive, vc.Why)
	}
	if vc := run("slower than real, busy", slower); vc.Verdict != VerdictDisagree || !strings.Contains(vc.Why, "quicker than the model") {
		t.Errorf("a model slower than the real run on a busy machine: %s (%s%s), want disagree", vc.Verdict, vc.Inconclusive, vc.Why)
	}
	if vc := run("right, busy"); vc.Verdict == VerdictDisagree {
		t.Errorf("a right model on a busy machine: disagree (%s)", vc.Why)
	}
}
