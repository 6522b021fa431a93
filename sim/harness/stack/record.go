package stack

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
)

// A Record is what a set of real runs writes: when, on what machine, with
// which versions of the software, and every run's Result.
type Record struct {
	Schema   int               `json:"schema"`
	Recorded string            `json:"recorded"`
	Machine  Machine           `json:"machine"`
	Software map[string]string `json:"software"`
	Runs     []*Result         `json:"runs"`
}

// Machine describes where the runs were measured.
type Machine struct {
	Kernel string `json:"kernel"`
	CPU    string `json:"cpu"`
	CPUs   int    `json:"cpus"`
}

// RecordSchema is the version of the Record format.
const RecordSchema = 1

// NewRecord starts a record with the machine and the software installed.
func NewRecord() *Record {
	r := &Record{Schema: RecordSchema, Recorded: time.Now().UTC().Format(time.RFC3339), Software: Versions()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		r.Machine.Kernel = strings.TrimSpace(string(b))
	}
	r.Machine.CPUs = runtime.NumCPU()
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				r.Machine.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	return r
}

var versionRE = regexp.MustCompile(`\d+\.\d+(\.\d+)?`)

var (
	versionsOnce sync.Once
	versions     map[string]string
)

// Versions asks each program for its version ("" when it is missing),
// once per process.
func Versions() map[string]string {
	versionsOnce.Do(func() { versions = readVersions() })
	return maps.Clone(versions)
}

func readVersions() map[string]string {
	v := map[string]string{}
	run := func(name string, prog string, args ...string) {
		out, _ := exec.Command(prog, args...).CombinedOutput()
		v[name] = versionRE.FindString(string(out))
	}
	run("nginx", "nginx", "-v")
	run("redis-server", "redis-server", "--version")
	run("gunicorn", "gunicorn", "--version")
	run("siege", "siege", "--version")
	py := "/usr/bin/python3"
	run("python", py, "--version")
	run("flask", py, "-c", "import importlib.metadata as m; print(m.version('flask'))")
	run("werkzeug", py, "-c", "import importlib.metadata as m; print(m.version('werkzeug'))")
	run("redis-py", py, "-c", "import importlib.metadata as m; print(m.version('redis'))")
	return v
}

// MarshalIndent writes the record with its header indented and each run
// on a line of its own: readable, and a change to one run is a one-line
// diff.
func (r *Record) MarshalIndent() ([]byte, error) {
	head := *r
	head.Runs = nil
	h, err := json.MarshalIndent(head, "", "  ")
	if err != nil {
		return nil, err
	}
	// Replace the closing "runs": null and brace.
	h = bytes.TrimSuffix(bytes.TrimSpace(h), []byte("}"))
	h = bytes.TrimSuffix(bytes.TrimSpace(h), []byte(`"runs": null`))
	var b bytes.Buffer
	b.Write(h)
	b.WriteString("\"runs\": [\n")
	for i, run := range r.Runs {
		line, err := json.Marshal(run)
		if err != nil {
			return nil, err
		}
		b.WriteString("    ")
		b.Write(line)
		if i < len(r.Runs)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("  ]\n}\n")
	return b.Bytes(), nil
}

// Line summarises a result on one line.
func Line(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %7.1f req/s", r.Name, r.ThroughputRPS)
	if p, ok := r.LatencyMS["p50"]; ok {
		fmt.Fprintf(&b, " p50 %.2fms", p)
	}
	if r.Errors > 0 {
		fmt.Fprintf(&b, " errors %d", r.Errors)
	}
	for _, h := range r.Hops {
		fmt.Fprintf(&b, " | %s: conn %d tw c/s/both %d/%d/%d", h.Name, h.Connects, h.TimeWaitClient, h.TimeWaitServer, h.TimeWaitBoth)
	}
	fmt.Fprintf(&b, " | cpu/req ms")
	for _, t := range Tiers {
		fmt.Fprintf(&b, " %s %.3f", t, r.CPUPerRequestMS[t])
	}
	fmt.Fprintf(&b, " | app waited for a CPU %.3f ms/req | psi %.0f%%", r.RunDelayPerRequestMS["app"], r.CPUPressure[0])
	return b.String()
}
