//go:build !js

package wasm

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// BenchmarkRun: what one re-run costs the page's model natively (the .wasm
// is slower by a factor site/model_bench_test.go measures in a browser):
// a small block (the PHP lab's workers, 36 requests) and two large ones
// (the connection pool lab's pool, about 9,000 requests, its events capped
// at PageEvents; the stack lab's little, 10,000 requests in two variants),
// with a changed key so that no expectations are checked.
func BenchmarkRun(b *testing.B) {
	for _, c := range []struct{ lab, block string }{
		{"php-persistent-pools", "workers"},
		{"connection-pool", "pool"},
		{"stack-connections", "little"},
	} {
		b.Run(c.block, func(b *testing.B) {
			bytes := 0
			s := New(func(p []byte) { bytes += len(p) }, nil)
			msg, _ := json.Marshal(labMessage(b, c.lab, "en", filepath.Join("..", "..", "labs", c.lab+".md")))
			s.Handle(msg)
			run := []byte(`{"type":"run","id":"r","lab":"` + c.lab + `","block":"` + c.block + `","params":{"rtt":"3ms"}}`)
			bytes = 0
			for b.Loop() {
				s.Handle(run)
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "bytes-sent/op")
		})
	}
}
