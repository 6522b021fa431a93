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

// safeLinkError fails t unless msg is short and free of control bytes
// (a terminal would act on them).
func safeLinkError(t *testing.T, what, msg string) {
	t.Helper()
	if len(msg) > 1024 {
		t.Errorf("%s: the error is %d bytes, want under 1 KB: %.300q…", what, len(msg), msg)
	}
	for i := 0; i < len(msg); i++ {
		if msg[i] < 0x20 && msg[i] != '\n' || msg[i] == 0x7f {
			t.Errorf("%s: the error holds the control byte %#x at %d: %q", what, msg[i], i, msg)
			break
		}
	}
}

// A link's errors quote it escaped and shortened, and a huge link is
// refused by its size before it is parsed.
func TestLinkErrorsShortAndSafe(t *testing.T) {
	chdirRoot(t)
	const page = "http://127.0.0.1:8080/labs/idle-timeouts/"
	blocks := func(n int) string {
		var q []string
		for i := range n {
			q = append(q, "b"+strconv.Itoa(i)+".seed=1")
		}
		return page + "?" + strings.Join(q, "&")
	}
	long := strings.Repeat("x", 5000)
	for _, c := range []struct {
		name, link, says string
	}{
		{"10000 blocks", blocks(10000), "65536"},
		{"600 blocks", blocks(600), "at most"},
		{"300 blocks", blocks(300), "and 290 more"},
		{"control bytes in the path", page[:len(page)-1] + "\x01\x1b[31m/?race.seed=1", "control"},
		{"control bytes in the query", page + "?race.r\x02tt=5", "control"},
		{"escaped control bytes in the path", page + "x%01%1b[31m" + long + "/", "no content/"},
		{"escaped control bytes in a name", page + "?race%01%1b[31m" + long + ".rtt=5", "BLOCK.KEY"},
		{"escaped control bytes in a seed", page + "?race.seed=%01%1b[31m" + long, "whole number"},
		{"a long bad escape", page + "?race.rtt=%zz" + long, "escape"},
		{"a long port", "http://127.0.0.1:" + strings.Repeat("9", 5000) + "x/labs/idle-timeouts/", "port"},
		{"a long block name", page + "?" + long + ".seed=1&b.seed=1", "add --block"},
	} {
		_, errs, code := runSim(t, "run", c.link)
		if code == 0 || !strings.Contains(errs, c.says) {
			t.Errorf("%s: exit %d, %.400q; want an error saying %q", c.name, code, errs, c.says)
		}
		safeLinkError(t, c.name, strings.TrimSuffix(errs, "\n"))
		// The same with --block, which names a block the link does not hold.
		_, errs, _ = runSim(t, "run", "--block", "nope", c.link)
		safeLinkError(t, c.name+" --block nope", strings.TrimSuffix(errs, "\n"))
	}
	// A value from the link the scenario refuses: escaped and shortened too.
	_, errs, code := runSim(t, "run", page+"?race.rtt=%01%1b[31m"+long)
	if code == 0 || !strings.Contains(errs, "rtt") {
		t.Errorf("a bad rtt: exit %d, %.400q; want an error naming rtt", code, errs)
	}
	safeLinkError(t, "a bad rtt", strings.TrimSuffix(errs, "\n"))
}

// sim run --link refuses a base with a query or a fragment: the printed
// link would carry them into the page's path.
func TestLinkBaseQueryFragment(t *testing.T) {
	chdirRoot(t)
	for _, c := range []struct{ base, says string }{
		{"http://x/p?y=1", "query"},
		{"http://x/p?", "query"},
		{"http://x/p#z", "fragment"},
		{"http://x/p?y=1#z", "query"},
	} {
		out, errs, code := runSim(t, "run", "--link", "--base", c.base, "--block", "idle", "labs/php-persistent-pools.md")
		if code != 2 || !strings.Contains(errs, c.says) || !strings.Contains(errs, "--base") || out != "" {
			t.Errorf("sim run --link --base %s: exit %d, %q %q; want a usage error (exit 2) naming the %s", c.base, code, out, errs, c.says)
		}
	}
	out, errs, code := runSim(t, "run", "--link", "--base", "https://example.org/connlab", "--block", "idle", "labs/php-persistent-pools.md")
	if want := "https://example.org/connlab/labs/php-persistent-pools/?idle.seed=1#sim-idle\n"; code != 0 || out != want {
		t.Errorf("sim run --link --base https://example.org/connlab: exit %d %q %s; want %q", code, out, errs, want)
	}
}
