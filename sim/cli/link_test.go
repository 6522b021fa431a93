package cli

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// chdirRoot runs the test from the repository root, where links find
// their files as a user's shell does.
func chdirRoot(t *testing.T) {
	t.Helper()
	wd, _ := os.Getwd()
	if err := os.Chdir("../.."); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir(wd) })
}

// sim run --link prints the link a page's Copy link gives, and sim run
// LINK runs the same numbers as the flags it came from.
func TestRunLink(t *testing.T) {
	chdirRoot(t)
	out, errs, code := runSim(t, "run", "--link", "--block", "idle", "--set", "pause=60s", "--set", "share_sets=[\"dns\", \"connect\"]", "--seed", "3", "labs/php-persistent-pools.md")
	link := strings.TrimSpace(out)
	want := `http://127.0.0.1:8080/labs/php-persistent-pools/?idle.pause=60s&idle.share_sets=[%22dns%22,%20%22connect%22]&idle.seed=3#sim-idle`
	want = strings.NewReplacer("[", "%5B", "]", "%5D").Replace(want)
	if code != 0 || link != want {
		t.Fatalf("sim run --link: exit %d %q %s\nwant %q", code, link, errs, want)
	}
	byLink, errs, code := runSim(t, "run", "--json", link)
	if code != 0 {
		t.Fatalf("sim run LINK: exit %d: %s", code, errs)
	}
	byFlags, _, _ := runSim(t, "run", "--json", "--block", "idle", "--set", "pause=60s", "--set", "share_sets=[\"dns\", \"connect\"]", "--seed", "3", "labs/php-persistent-pools.md")
	if byLink != byFlags {
		t.Errorf("sim run LINK and sim run with the link's flags differ:\n%s\n%s", byLink, byFlags)
	}
	// A translation's page, a site under a path, a flag that wins.
	for _, l := range []string{
		"https://example.org/connlab/ko/labs/php-persistent-pools/?idle.pause=60s&idle.share_sets=%5B%22dns%22%2C+%22connect%22%5D&idle.seed=5",
	} {
		got, errs, code := runSim(t, "run", "--json", "--seed", "3", l)
		if code != 0 || got != byFlags {
			t.Errorf("sim run --seed 3 %s: exit %d %s; want the same output", l, code, errs)
		}
	}
	for _, c := range []struct{ args, says string }{
		{"run --link labs/php-persistent-share.md", "add --block"},
		{"run --link --base ftp://x/ --block idle labs/php-persistent-pools.md", "--base"},
		{"run http://127.0.0.1:8080/labs/php-persistent-pools/?idle.seed=1&workers.seed=2", "add --block"},
		{"run http://127.0.0.1:8080/labs/no-such-lab/?idle.seed=1", "labs/no-such-lab.md"},
		{"run http://127.0.0.1:8080/labs/php-persistent-pools/?idle.seed=x", "whole number"},
		{"run http://127.0.0.1:8080/labs/php-persistent-pools/?idle.rtt=fast", "rtt"},
	} {
		_, errs, code := runSim(t, strings.Fields(c.args)...)
		if code == 0 || !strings.Contains(errs, c.says) {
			t.Errorf("sim %s: exit %d, %q; want an error saying %q", c.args, code, errs, c.says)
		}
	}
}

func TestParseLink(t *testing.T) {
	chdirRoot(t)
	for link, want := range map[string]string{
		"http://127.0.0.1:8080/anatomy/?call.rtt=20ms#sim-call":              "content/anatomy.md call [rtt=20ms] 1",
		"http://127.0.0.1:8080/ko/anatomy/#sim-call":                         "content/anatomy.md call [] 1",
		"http://h/labs/idle-timeouts/index.html?race.seed=9&seed=7":          "labs/idle-timeouts.md race [] 9",
		"http://h/labs/idle-timeouts/?race.keepalive_timeout=5s&race.seed=2": "labs/idle-timeouts.md race [keepalive_timeout=5s] 2",
	} {
		st, err := ParseLink(link, "", ".")
		if err != nil {
			t.Errorf("%s: %v", link, err)
			continue
		}
		if got := st.File + " " + st.Block + " [" + strings.Join(st.Set, " ") + "] " + strconv.FormatUint(st.Seed, 10); got != want {
			t.Errorf("%s: %s, want %s", link, got, want)
		}
	}
}
