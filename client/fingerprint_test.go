package client

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type fingerprintVector struct {
	MachineID   string `json:"machine_id"`
	App         string `json:"app"`
	Fingerprint string `json:"fingerprint"`
}

// fingerprintVectors are the fingerprints every client must compute alike
// (testdata/fingerprint_vectors.json, read by the Python and TypeScript
// clients' tests too).
func fingerprintVectors(t *testing.T) []fingerprintVector {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fingerprint_vectors.json"))
	require.NoError(t, err)
	var f struct{ Vectors []fingerprintVector }
	require.NoError(t, json.Unmarshal(b, &f))
	require.GreaterOrEqual(t, len(f.Vectors), 5)
	return f.Vectors
}

func notAsked() (string, error) { return "", errors.New("not asked") }

func linuxSources(env string, files ...string) machineIDSources {
	return machineIDSources{
		getenv: func(k string) string {
			if k == MachineIDEnv {
				return env
			}
			return ""
		},
		goos: "linux", files: files, ioreg: notAsked, registry: notAsked,
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestMachineFingerprintVectors(t *testing.T) {
	for _, v := range fingerprintVectors(t) {
		t.Setenv(MachineIDEnv, v.MachineID)
		got, err := MachineFingerprint(v.App)
		require.NoError(t, err)
		require.Equal(t, v.Fingerprint, got, "SEATD_MACHINE_ID=%q app %q", v.MachineID, v.App)

		id, err := linuxSources("", writeFile(t, "machine-id", v.MachineID)).machineID()
		require.NoError(t, err)
		require.Equal(t, v.Fingerprint, fingerprintOf(id, v.App), "machine-id file %q app %q", v.MachineID, v.App)
	}
}

func TestMachineFingerprintErrors(t *testing.T) {
	t.Setenv(MachineIDEnv, "0123456789abcdef0123456789abcdef")
	_, err := MachineFingerprint("")
	require.ErrorContains(t, err, "app")

	_, err = linuxSources("", "/nonexistent/machine-id").machineID()
	require.ErrorIs(t, err, ErrNoMachineID)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, MachineIDEnv)
	require.ErrorContains(t, err, "/nonexistent/machine-id")
}

func TestMachineIDOverrideWins(t *testing.T) {
	file := writeFile(t, "machine-id", "from-the-file\n")
	id, err := linuxSources(" from-the-env\n", file).machineID()
	require.NoError(t, err)
	require.Equal(t, "from-the-env", id)

	id, err = linuxSources(" \t\n", file).machineID()
	require.NoError(t, err)
	require.Equal(t, "from-the-file", id, "a blank override is not set")

	mac := linuxSources("e")
	mac.goos = "darwin"
	id, err = mac.machineID()
	require.NoError(t, err)
	require.Equal(t, "e", id, "the override is not only Linux's")
}

func TestMachineIDLinuxFiles(t *testing.T) {
	etc, dbus, blank := writeFile(t, "etc", "etc-id\n"), writeFile(t, "dbus", "dbus-id\n"), writeFile(t, "blank", "\n")
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{etc, dbus}, "etc-id"},
		{[]string{blank, dbus}, "dbus-id"},
		{[]string{filepath.Join(t.TempDir(), "missing"), dbus}, "dbus-id"},
	} {
		id, err := linuxSources("", c.files...).machineID()
		require.NoError(t, err)
		require.Equal(t, c.want, id, "%v", c.files)
	}
	_, err := linuxSources("", blank).machineID()
	require.ErrorIs(t, err, ErrNoMachineID)
	require.ErrorContains(t, err, "is blank")
	require.Equal(t, []string{"/etc/machine-id", "/var/lib/dbus/machine-id"}, osMachineID.files)
}

func TestMachineIDMacOSAndWindows(t *testing.T) {
	const ioreg = `+-o J316sAP  <class IOPlatformExpertDevice, id 0x100000112, registered, matched, active, busy 0 (0 ms), retain 37>
    {
      "IOPlatformSerialNumber" = "C02XXXXXXXXX"
      "IOPlatformUUID" = "8F3C0D2E-1A2B-4C5D-9E8F-0A1B2C3D4E5F"
    }
`
	mac := linuxSources("")
	mac.goos = "darwin"
	mac.ioreg = func() (string, error) { return ioreg, nil }
	id, err := mac.machineID()
	require.NoError(t, err)
	require.Equal(t, "8F3C0D2E-1A2B-4C5D-9E8F-0A1B2C3D4E5F", id)
	mac.ioreg = func() (string, error) { return "{}\n", nil }
	_, err = mac.machineID()
	require.ErrorIs(t, err, ErrNoMachineID)
	mac.ioreg = func() (string, error) { return "", exec.ErrNotFound }
	_, err = mac.machineID()
	require.ErrorIs(t, err, ErrNoMachineID)
	require.ErrorIs(t, err, exec.ErrNotFound)

	win := linuxSources("")
	win.goos = "windows"
	win.registry = func() (string, error) { return " 5b3a0e4c\r\n", nil }
	id, err = win.machineID()
	require.NoError(t, err)
	require.Equal(t, "5b3a0e4c", id)
}

// TestFingerprintAgreesAcrossLanguages runs the Python client's
// (python3 -m seatd.fingerprint) and the TypeScript client's
// (machineFingerprint, compiled from client/node/src/fingerprint.ts) helpers
// as programs, with SEATD_MACHINE_ID set to each vector's machine id: each
// prints the vector's fingerprint, as Go computes it. Then with the override
// blank, on this machine's own id: the three agree, or all three fail. Python
// (Debian's, with the client's packages) and Node with client/node's
// node_modules are required (make preflight, npm ci), never skipped.
func TestFingerprintAgreesAcrossLanguages(t *testing.T) {
	python := "/usr/bin/python3" // the Debian Python the client runs on (make test/python)
	if _, err := os.Stat(python); err != nil {
		python, err = exec.LookPath("python3")
		require.NoError(t, err, "this test runs the Python client: install Debian's python3 and the client's packages (make preflight)")
	}
	node, err := exec.LookPath("node")
	require.NoError(t, err, "this test runs the TypeScript client: install Node.js >= 20 (make preflight)")
	nodeDir, err := filepath.Abs("node")
	require.NoError(t, err)
	tsc := filepath.Join(nodeDir, "node_modules", "typescript", "bin", "tsc")
	_, err = os.Stat(tsc)
	require.NoError(t, err, "this test compiles the TypeScript client's helper: run npm ci in client/node (make test/node does)")

	// Only the helper, into a directory of its own: client/node/dist is
	// make test/node's, which may be rebuilding it.
	out := t.TempDir()
	compile := exec.CommandContext(t.Context(), node, tsc, "--outDir", out, "--rootDir", "src", "--module", "nodenext",
		"--moduleResolution", "nodenext", "--target", "es2022", "--strict", "--skipLibCheck", "--types", "node",
		filepath.Join("src", "fingerprint.ts"))
	compile.Dir = nodeDir
	b, err := compile.CombinedOutput()
	require.NoError(t, err, "tsc: %s", b)
	require.NoError(t, os.WriteFile(filepath.Join(out, "package.json"), []byte(`{"type": "module"}`), 0o600))
	module := "file://" + filepath.ToSlash(filepath.Join(out, "fingerprint.js"))
	pythonPath, err := filepath.Abs("python")
	require.NoError(t, err)

	// run runs a helper with SEATD_MACHINE_ID = machineID: its fingerprint,
	// or its error.
	run := func(name, machineID, app string) (string, error) {
		var cmd *exec.Cmd
		switch name {
		case "python":
			cmd = exec.CommandContext(t.Context(), python, "-B", "-m", "seatd.fingerprint", app)
		case "node":
			cmd = exec.CommandContext(t.Context(), node, "--input-type=module", "-e",
				`const m = await import(process.argv[1]); process.stdout.write(m.machineFingerprint(process.argv[2]) + "\n");`,
				module, app)
		}
		cmd.Env = append(withoutEnv(os.Environ(), MachineIDEnv, "PYTHONPATH"), MachineIDEnv+"="+machineID, "PYTHONPATH="+pythonPath)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			return "", errors.New(err.Error() + ": " + stderr.String())
		}
		return strings.TrimSpace(string(b)), nil
	}

	for _, v := range fingerprintVectors(t) {
		id, err := linuxSources(v.MachineID).machineID()
		require.NoError(t, err)
		goFP := fingerprintOf(id, v.App)
		require.Equal(t, v.Fingerprint, goFP)
		for _, lang := range []string{"python", "node"} {
			got, err := run(lang, v.MachineID, v.App)
			require.NoError(t, err, "%s with %s=%q", lang, MachineIDEnv, v.MachineID)
			require.Equal(t, goFP, got, "%s with %s=%q app %q", lang, MachineIDEnv, v.MachineID, v.App)
		}
	}

	// This machine's own id; a blank override is not set.
	own := osMachineID
	own.getenv = func(string) string { return "" }
	id, ownErr := own.machineID()
	for _, lang := range []string{"python", "node"} {
		got, err := run(lang, " ", "com.example.cad")
		if ownErr != nil {
			require.Error(t, err, "%s found a machine id where Go found none (%v): %s", lang, ownErr, got)
			continue
		}
		require.NoError(t, err, "%s found no machine id; Go's is %q", lang, id)
		require.Equal(t, fingerprintOf(id, "com.example.cad"), got, "%s on this machine's own id", lang)
	}
}

// withoutEnv is env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	var kept []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		kept = append(kept, kv)
	}
	return kept
}
