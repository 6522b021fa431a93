//go:build !linux

package netem

import "time"

// preciseWait falls back to Go's timer outside Linux; real runs need Linux
// anyway (namespaces), this keeps the package building elsewhere.
func preciseWait(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}

// TightenTimerSlack does nothing outside Linux.
func TightenTimerSlack() (time.Duration, error) { return 0, nil }
