package measure

import (
	"math"
	"os"
	"testing"
)

// fuzz reads any input in one format: it returns calls or an error, never
// panics, and the calls it returns are finite, non-negative and in order.
func fuzz(f *testing.F, format Format, seeds ...string) {
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		} else {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxBytes: 1 << 20, MaxCalls: 1000}
		calls, _, err := Parse(data, format, lim)
		if err != nil {
			if calls != nil {
				t.Fatal("calls with an error")
			}
			return
		}
		if len(calls) == 0 || len(calls) > lim.MaxCalls {
			t.Fatalf("%d calls", len(calls))
		}
		for _, c := range calls {
			prev := 0.0
			for _, v := range []float64{c.NameLookup, c.Connect, c.AppConnect, c.StartTransfer, c.Total} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < prev {
					t.Fatalf("%s: phases out of order: %+v", c.Source, c)
				}
				prev = v
			}
			if c.DNS < 0 || c.TCP < 0 || c.TLS < 0 || c.Host == "" {
				t.Fatalf("%s: %+v", c.Source, c)
			}
		}
		for _, s := range Summarize(calls) {
			if s.Calls == 0 || s.MinPool < 1 || math.IsNaN(s.SavedMS) || s.SavedMS < 0 {
				t.Fatalf("summary %+v", s)
			}
		}
	})
}

func FuzzHAR(f *testing.F) {
	fuzz(f, HAR, "testdata/chromium.har", har(harEntryOK), har(harEntryOK, `{}`), `{"log":{"entries":[1e999]}}`, `{"log":null}`)
}

func FuzzCurl(f *testing.F) {
	fuzz(f, Curl, "testdata/curl-7.88.ndjson", curlOK, curlOK+"\n{", `{"time_total":"x"}`)
}

func FuzzK6(f *testing.F) {
	fuzz(f, K6, "testdata/k6-handmade.ndjson", k6Lines(""), k6Lines("http_req_sending"), `{"type":"Point","metric":"http_req_blocked","data":{"tags":{}}}`)
}
