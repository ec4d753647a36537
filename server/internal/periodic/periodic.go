// Package periodic runs work at a fixed interval until told to stop: the
// write-behind flush loops of both stores.
package periodic

import "time"

// Run calls f every interval (real time), the first time one interval
// from now, and returns once stop is closed (after the call in progress).
func Run(stop <-chan struct{}, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f()
		}
	}
}
