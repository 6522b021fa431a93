package cli

import (
	"flag"
	"net/http"
)

// A serveExtension adds flags and HTTP handlers to `sim serve` from another
// command's file, so a feature keeps its code together (class mode lives
// with the exercises). serve.go registers every extension's flags on its
// FlagSet, parses, then calls mount on the server's mux before it listens.
type serveExtension struct {
	// flags registers the extension's flags.
	flags func(fs *flag.FlagSet)
	// mount adds handlers, or does nothing when the extension's flags leave
	// it off. labsDirs are the directories `sim serve` reads pages from.
	mount func(mux *http.ServeMux, env *Env, labsDirs []string) error
}

var serveExtensions []serveExtension
