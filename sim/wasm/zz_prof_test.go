package wasm

import (
	"encoding/json"
	"os"
	"testing"
)

func benchRun(b *testing.B, file, block string) {
	text, _ := os.ReadFile(file)
	msg, _ := json.Marshal(map[string]any{"type": "lab", "id": "l", "lab": "x", "lang": "en", "text": string(text)})
	n := 0
	s := New(func(p []byte) { n += len(p) }, nil)
	s.Handle(msg)
	run := []byte(`{"type":"run","id":"r","lab":"x","block":"` + block + `","params":{"rtt":"3ms"}}`)
	for b.Loop() {
		s.Handle(run)
	}
	b.ReportMetric(float64(n)/float64(b.N), "bytes/op")
}

func BenchmarkWorkersRun(b *testing.B) { benchRun(b, "/tmp/w2/data/labs/en/php-persistent-share.json", "workers") }
func BenchmarkPoolRun(b *testing.B)    { benchRun(b, "/tmp/w2/data/labs/en/connection-pool.json", "pool") }
