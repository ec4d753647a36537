package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
)

// MachineIDEnv names the environment variable that, set to a non-blank
// value, is the machine id instead of the OS's: for containers, whose own id
// is new with each container, and CI (docs/clients/index.md, "A machine
// fingerprint").
const MachineIDEnv = "SEATD_MACHINE_ID"

// ErrNoMachineID: MachineFingerprint found no machine id (MachineIDEnv unset
// or blank, and the OS has none it can read).
var ErrNoMachineID = errors.New("no machine id")

// linuxMachineIDFiles are read in this order; the first non-blank one is the
// id. systemd writes the first; dbus the second (often a link to the first).
var linuxMachineIDFiles = []string{"/etc/machine-id", "/var/lib/dbus/machine-id"}

// MachineFingerprint returns a fingerprint of this machine for the
// application app (its own name, e.g. "com.example.cad"), to pass as
// AcquireOptions.Fingerprint:
//
//	fp, err := client.MachineFingerprint("com.example.cad")
//	...
//	lease, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: key, Fingerprint: fp})
//
// It is the lowercase hex of HMAC-SHA256 keyed by the machine id (surrounding
// ASCII whitespace trimmed) over app: the same on one machine for one app, in every
// seatd client (Python's machine_fingerprint, TypeScript's
// machineFingerprint), and, keyed with another app's name, not matchable to
// another vendor's id of the machine. The machine id is MachineIDEnv when it
// is set and not blank, else the OS's: /etc/machine-id, then
// /var/lib/dbus/machine-id (Linux and other Unix), IOPlatformUUID (macOS,
// from ioreg), MachineGuid (Windows, the registry). It equals
// github.com/denisbrodbeck/machineid's ProtectedID(app) on a machine whose two
// Linux id files agree. An empty app is an error; no machine id is
// ErrNoMachineID.
func MachineFingerprint(app string) (string, error) {
	if app == "" {
		return "", errors.New("machine fingerprint: app (the application's name) is empty")
	}
	id, err := osMachineID.machineID()
	if err != nil {
		return "", fmt.Errorf("machine fingerprint: %w", err)
	}
	return fingerprintOf(id, app), nil
}

// trimSpace trims ASCII whitespace, as every client does (C's isspace), so
// that they agree on any machine id.
func trimSpace(s string) string { return strings.Trim(s, " \t\n\r\v\f") }

// fingerprintOf is the fingerprint of app on the machine of id.
func fingerprintOf(id, app string) string {
	mac := hmac.New(sha256.New, []byte(trimSpace(id)))
	mac.Write([]byte(app))
	return hex.EncodeToString(mac.Sum(nil))
}

// machineIDSources are where a machine id is looked for; tests replace them.
type machineIDSources struct {
	getenv   func(string) string
	goos     string
	files    []string               // Linux and other Unix, in order
	ioreg    func() (string, error) // macOS: ioreg's output
	registry func() (string, error) // Windows: MachineGuid
}

var osMachineID = machineIDSources{
	getenv:   os.Getenv,
	goos:     runtime.GOOS,
	files:    linuxMachineIDFiles,
	ioreg:    runIoreg,
	registry: windowsMachineGUID,
}

// machineID returns the machine id, trimmed and not blank.
func (s machineIDSources) machineID() (string, error) {
	if id := trimSpace(s.getenv(MachineIDEnv)); id != "" {
		return id, nil
	}
	var (
		id    string
		err   error
		where string
	)
	switch s.goos {
	case "darwin":
		where = "IOPlatformUUID"
		var out string
		if out, err = s.ioreg(); err == nil {
			id = ioregPlatformUUID(out)
		}
	case "windows":
		where = `MachineGuid (HKLM\SOFTWARE\Microsoft\Cryptography)`
		id, err = s.registry()
	default:
		where = strings.Join(s.files, " or ")
		for _, f := range s.files {
			b, ferr := readSmall(f)
			if ferr != nil {
				err = ferr
				continue
			}
			if id = trimSpace(string(b)); id != "" {
				break
			}
		}
	}
	if id = trimSpace(id); id != "" {
		return id, nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: %s is not set and %s has none (%w)", ErrNoMachineID, MachineIDEnv, where, err)
	}
	return "", fmt.Errorf("%w: %s is not set and %s is blank", ErrNoMachineID, MachineIDEnv, where)
}

// readSmall reads a machine id file, of at most 4 KiB (an id is 33 bytes):
// anything longer is not one.
func readSmall(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: a close error loses nothing
	return io.ReadAll(io.LimitReader(f, 4096))
}

// runIoreg asks macOS for its platform expert device, whose IOPlatformUUID
// is the machine id.
func runIoreg() (string, error) {
	out, err := exec.Command("/usr/sbin/ioreg", "-rd1", "-c", "IOPlatformExpertDevice").Output()
	if err != nil {
		return "", fmt.Errorf("ioreg: %w", err)
	}
	return string(out), nil
}

var ioregUUID = regexp.MustCompile(`"IOPlatformUUID"\s*=\s*"([^"]*)"`)

// ioregPlatformUUID finds `"IOPlatformUUID" = "…"` in ioreg's output; "" if
// there is none.
func ioregPlatformUUID(out string) string {
	if m := ioregUUID.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}
