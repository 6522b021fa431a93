package cli

import (
	"encoding/json"
	"net/http"
)

// serverInfo answers GET /api/server.json. The built site has the same path
// as a static file saying {"server": false}, so a page learns which host
// served it without a failed request (a WebSocket to a missing /ws logs an
// error in the console) and runs the model in the page on a static host.
func serverInfo(real, class bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(map[string]bool{"server": true, "real": real, "class": class})
	})
}
