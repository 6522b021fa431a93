package cli

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
)

// The lab pages ask GET /api/server.json which host served them: the built
// site has it as a static file saying {"server": false}, and sim serve
// answers it here, so a page on a static host learns that without a failed
// request (a WebSocket to a missing /ws logs an error in the console) and
// runs the model in the page instead.
func init() {
	serveExtensions = append(serveExtensions, serveExtension{
		flags: func(*flag.FlagSet) {},
		mount: func(mux *http.ServeMux, _ *Env, _ []string) error {
			mux.HandleFunc("GET /api/server.json", func(w http.ResponseWriter, r *http.Request) {
				// Class mode is on when another extension mounted its pages.
				_, pattern := mux.Handler(httptest.NewRequest(http.MethodGet, "/class/info", nil))
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Cache-Control", "no-store")
				json.NewEncoder(w).Encode(map[string]bool{"server": true, "real": serveReal != nil, "class": pattern == "GET /class/info"})
			})
			return nil
		},
	})
}
