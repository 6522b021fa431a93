//go:build !js

package wasm

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
)

type recorder struct {
	*httptest.ResponseRecorder
	body *bytes.Buffer
}

func newRecorder() *recorder {
	r := httptest.NewRecorder()
	return &recorder{r, r.Body}
}

func mustRequest(u string) *http.Request { return httptest.NewRequest(http.MethodGet, u, nil) }

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
