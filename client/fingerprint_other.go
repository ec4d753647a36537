//go:build !windows

package client

import "errors"

// windowsMachineGUID is Windows' alone.
func windowsMachineGUID() (string, error) {
	return "", errors.New("no registry: not Windows")
}
