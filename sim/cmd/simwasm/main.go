//go:build js && wasm && nolabparse

// Command simwasm is the model for lab pages on a static host, built with
// GOOS=js GOARCH=wasm and the tag nolabparse (no Markdown or TOML reader:
// the page hands it each lab as data) by `make wasm` (into
// site/assets/wasm/, which Hugo fingerprints). The page's worker (site/assets/ts/model/worker.ts) loads
// it with Go's wasm_exec.js; it defines connlabHandle(message) and answers
// through connlabPost(reply), one JSON text each (package sim/wasm).
package main

import (
	"syscall/js"
	"time"
	"unsafe"

	"github.com/connlab/connlab/sim/wasm"
)

func main() {
	post := js.Global().Get("connlabPost")
	s := wasm.New(func(b []byte) {
		// The JS string is made from b's bytes during the call (Session.Post
		// lets b be reused after it): no Go copy of each batch of events.
		post.Invoke(unsafe.String(unsafe.SliceData(b), len(b)))
	},
		// A timer hands the event loop to the browser, which delivers
		// the page's messages (a cancel) before the run goes on.
		func() { time.Sleep(time.Millisecond) })
	js.Global().Set("connlabHandle", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) == 1 {
			msg := []byte(args[0].String())
			go s.Handle(msg)
		}
		return nil
	}))
	js.Global().Call("connlabReady")
	select {}
}
