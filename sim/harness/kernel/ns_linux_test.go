package kernel

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestInnermostPID(t *testing.T) {
	for _, c := range []struct {
		status string
		want   int
	}{
		{"Name:\tsim\nNSpid:\t48211\t7\nNSpgid:\t1\n", 7},
		{"Name:\tsim\nNSpid:\t48211\n", 48211},
		{"Name:\tsim\n", 99}, // kernels before 4.1 have no NSpid line
		{"NSpid:\n", 99},
	} {
		if got := innermostPID(c.status, 99); got != c.want {
			t.Errorf("%q: %d, want %d", c.status, got, c.want)
		}
	}
}

// TestNiceInPIDNamespace: a lab process runs in a PID namespace of its own
// while /proc is the host's, so /proc/self/task names its threads by host
// IDs. Setting every thread's nice value must still reach them all (it
// once failed with ESRCH on each and said nothing).
func TestNiceInPIDNamespace(t *testing.T) {
	if os.Getenv("CONNLAB_NICE_CHILD") != "" {
		if err := LowerPriority(); err != nil {
			t.Fatal(err)
		}
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			stat, err := os.ReadFile("/proc/self/task/" + task.Name() + "/stat")
			if err != nil {
				continue // the thread ended
			}
			// Field 19 is the nice value; fields count after the ")" that ends the name.
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if n, _ := strconv.Atoi(f[16]); n != 19 {
				t.Errorf("thread %s: nice %d, want 19", task.Name(), n)
			}
		}
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare is not installed")
	}
	args := []string{"--pid", "--fork"}
	if os.Geteuid() != 0 {
		args = append([]string{"--user", "--map-root-user"}, args...)
	}
	cmd := exec.Command(unshare, append(args, os.Args[0], "-test.run=^TestNiceInPIDNamespace$", "-test.v")...)
	cmd.Env = append(os.Environ(), "CONNLAB_NICE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "unshare failed") {
		t.Skipf("PID namespaces refused here: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child in a PID namespace: %v\n%s", err, out)
	}
}
