//go:build windows

package client

import (
	"fmt"

	"golang.org/x/sys/windows/registry"
)

// windowsMachineGUID reads MachineGuid from the 64-bit view of the registry
// (the same for a 32-bit program on 64-bit Windows).
func windowsMachineGUID() (string, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SOFTWARE\Microsoft\Cryptography`, registry.QUERY_VALUE|registry.WOW64_64KEY)
	if err != nil {
		return "", fmt.Errorf("registry: %w", err)
	}
	defer k.Close()
	s, _, err := k.GetStringValue("MachineGuid")
	if err != nil {
		return "", fmt.Errorf("registry MachineGuid: %w", err)
	}
	return s, nil
}
