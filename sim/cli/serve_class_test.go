package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The lab pages' data files (labs/NAME.<hash>.json, `sim lab --json` as
// Hugo fingerprints it) hold each exercise whole: sim serve serves them so
// without --class (the page's model grades exercises with them), and with
// --class without their exercises, so no answer formula reaches a student
// before the reveal.
func TestServeClassLabData(t *testing.T) {
	built, errs, code := runSim(t, "lab", "--json", phpLab)
	if code != 0 {
		t.Fatalf("sim lab --json: %d %s", code, errs)
	}
	var lab struct {
		Blocks    []json.RawMessage `json:"blocks"`
		Exercises []struct {
			ID     string `json:"id"`
			Expect []struct {
				Text string `json:"text"`
			} `json:"expect"`
		} `json:"exercises"`
	}
	if err := json.Unmarshal([]byte(built), &lab); err != nil {
		t.Fatal(err)
	}
	var formulas []string
	for _, x := range lab.Exercises {
		for _, e := range x.Expect {
			formulas = append(formulas, e.Text)
		}
	}
	if len(formulas) == 0 {
		t.Fatalf("%s: no exercise states its answer", phpLab)
	}
	public := t.TempDir()
	os.MkdirAll(filepath.Join(public, "labs"), 0o755)
	path := "/labs/php-persistent-share.0123456789abcdef0123456789abcdef.json"
	os.WriteFile(filepath.Join(public, filepath.FromSlash(path)), []byte(built), 0o644)

	base, stop := startServe(t, "--addr", "127.0.0.1:0", "--public", public, "--labs", "../../labs")
	if status, body, _ := get(t, base+path); status != 200 || body != built {
		t.Errorf("without --class: %d, %d bytes; want the file as built (%d bytes)", status, len(body), len(built))
	}
	stop()

	base, _ = startServe(t, "--addr", "127.0.0.1:0", "--public", public, "--labs", "../../labs", "--class")
	status, body, header := get(t, base+path)
	if status != 200 || header.Get("Cache-Control") != "no-store" {
		t.Fatalf("with --class: %d %v", status, header)
	}
	var served map[string]any
	if err := json.Unmarshal([]byte(body), &served); err != nil {
		t.Fatal(err)
	}
	if xs, ok := served["exercises"].([]any); !ok || len(xs) != 0 {
		t.Errorf("with --class the exercises are served: %v", served["exercises"])
	}
	if bs, _ := served["blocks"].([]any); len(bs) != len(lab.Blocks) {
		t.Errorf("with --class, %d blocks served of %d", len(bs), len(lab.Blocks))
	}
	// The text as JSON has it (< escaped) and as written.
	for _, f := range formulas {
		esc, _ := json.Marshal(f)
		if strings.Contains(body, f) || strings.Contains(body, strings.Trim(string(esc), `"`)) {
			t.Errorf("with --class an answer formula is served: %q", f)
		}
	}
}
