package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const measureData = "../measure/testdata/"

// sim import prints each host's counts and the estimate; --json the
// fields its help lists.
func TestImport(t *testing.T) {
	out, errs, code := runSim(t, "import", measureData+"curl-7.88.ndjson")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"curl, 7 calls to 1 host", "https://api.connlab.test:41763", "4 opened a connection, 3 reused one", "reuse would save: 3 avoidable connection(s) x 23.996 ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	out, errs, code = runSim(t, "import", "--json", measureData+"chromium.har")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Format string
		Calls  int
		Hosts  []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Format != "har" || doc.Calls != 10 || len(doc.Hosts) != 2 {
		t.Fatalf("%+v", doc)
	}
	help, _, _ := runSim(t, "import", "--help")
	for k := range doc.Hosts[1] {
		if !strings.Contains(help, k) {
			t.Errorf("--help does not document %q", k)
		}
	}
	for _, k := range []string{"namelookup_ms", "connect_ms", "appconnect_ms", "starttransfer_ms", "total_ms", "setup_ms"} {
		st, _ := doc.Hosts[1]["new"].(map[string]any)[k].(map[string]any)
		if _, ok := st["p90"].(float64); !ok {
			t.Errorf("new.%s.p90 missing", k)
		}
	}
}

// sim import - reads standard input; --format is held to.
func TestImportStdin(t *testing.T) {
	data, err := os.ReadFile(measureData + "k6-handmade.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), &Env{Stdin: bytes.NewReader(data), Stdout: &out, Stderr: &errb}, []string{"import", "-", "--format", "k6"})
	if code != 0 || !strings.Contains(out.String(), "standard input: k6, 6 calls") {
		t.Errorf("exit %d: %s%s", code, out.String(), errb.String())
	}
	code = Run(context.Background(), &Env{Stdin: bytes.NewReader(data), Stdout: &out, Stderr: &errb}, []string{"import", "-", "--format", "curl"})
	if code != 2 || !strings.Contains(errb.String(), "sim import: standard input: curl line 1: url_effective: missing") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}

// Errors name the file, the entry and the field; a large file is refused
// by its size.
func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.har")
	os.WriteFile(bad, []byte(`{"log":{"entries":[{"startedDateTime":"2026-12-07T23:16:57.557Z","time":1,"request":{"url":"http://127.0.0.1:1/"},"timings":{"send":0,"wait":1,"receive":0}},{"startedDateTime":"2026-12-07T23:16:57.557Z","time":1,"request":{"url":"http://127.0.0.1:1/"},"timings":{"connect":-7,"send":0,"wait":1,"receive":0}}]}}`), 0o644)
	big := filepath.Join(dir, "big.json")
	f, _ := os.Create(big)
	f.Truncate(50<<20 + 1)
	f.Close()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import", bad}, "sim import: " + bad + ": har entry 1: timings.connect: -7 is negative (only -1, not applicable, is allowed)"},
		{[]string{"import", big}, "sim import: " + big + ": input too large: 52428801 bytes, more than 50 MB (the limit)"},
		{[]string{"import", filepath.Join(dir, "none.har")}, "no such file"},
		{[]string{"import", "--format", "pcap", bad}, "--format: unknown format \"pcap\""},
		{[]string{"import"}, "takes one FILE"},
		{[]string{"import", filepath.Join(dir, "notes.txt")}, "sim import: " + filepath.Join(dir, "notes.txt") + ": unknown format: the input does not start"},
	} {
		_, errs, code := runSim(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want %q", tc.args, code, errs, tc.want)
		}
	}
}
