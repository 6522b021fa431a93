package site

// A link whose value the model refuses (?race.rtt=-5ms) shows why on the
// page: the widget's status names the key and the model's reason, on a
// static host (the model in the page) and on sim serve.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestBrowserLinkBadValue(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	files := staticServer(t, s.public)
	live, _ := serve(t, s)
	const id = "sim-race"
	for _, host := range []struct{ name, base string }{{"static", files.URL}, {"serve", live}} {
		for _, c := range []struct {
			query string
			says  []string // the key and the value, in the status
		}{
			{"race.rtt=-5ms", []string{"rtt", "-5ms"}},
			{"race.workers=abc", []string{"workers", "abc"}},
			{"race.mss=10", []string{"mss", "10"}},       // a key without a control
			{"race.tls=bogus", []string{"tls", "bogus"}}, // none of a select's options
		} {
			t.Run(host.name+"/"+c.query, func(t *testing.T) {
				link := host.base + pageURL("labs", "idle-timeouts", "en") + "?" + c.query + "&race.seed=1#" + id
				if !strings.Contains(link, "/labs/idle-timeouts/") {
					t.Fatalf("link %s: not the idle-timeouts lab page", link)
				}
				if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(link)); err != nil {
					t.Fatal(err)
				}
				var w *widgetState
				for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
					var err error
					if w, err = readWidget(ctx, id); err != nil {
						t.Fatal(err)
					}
					if w.Ready || w.State == "error" || w.State == "noserver" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: no answer within 2 minutes (status %q)", link, w.Status)
					}
				}
				if w.Ready || w.State != "error" {
					t.Fatalf("%s: state %q ready %v, status %q; want an error", link, w.State, w.Ready, w.Status)
				}
				t.Logf("%s: %s", link, w.Status)
				for _, want := range c.says {
					if !strings.Contains(w.Status, want) {
						t.Errorf("%s: the status %q does not name %q", link, w.Status, want)
					}
				}
				if key := c.says[0]; strings.Contains(w.Status, key+": "+key+":") {
					t.Errorf("%s: the status %q names %s twice", link, w.Status, key)
				}
				marked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`!!document.querySelector("#%s .sim-field.invalid")`, id)))
				if err != nil {
					t.Fatal(err)
				}
				if hasControl := c.says[0] != "mss"; marked != hasControl {
					t.Errorf("%s: a control marked invalid: %v, want %v", link, marked, hasControl)
				}
			})
		}
	}
}
