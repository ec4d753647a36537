package embedded

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"

	bolterrors "go.etcd.io/bbolt/errors"
)

// DamagedError is a data file seatd will not open: serving from it would
// lose or invent data. Its message is the one line an operator needs.
type DamagedError struct {
	Path   string // the data file
	Reason string // what is wrong with it, in words
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("data file %s is damaged (%s): %s", e.Path, e.Reason, advice(filepath.Dir(e.Path)))
}

// advice is what an operator does about a data dir seatd refuses.
func advice(dir string) string {
	return fmt.Sprintf("restore it from a backup with 'seatd restore FILE --data-dir %s', or move the data dir away to start empty", dir)
}

func damaged(path, format string, args ...any) error {
	return &DamagedError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// boltDamage turns bbolt's "this is not a database I can read" errors
// into a DamagedError; others pass unchanged.
func boltDamage(path string, err error) error {
	switch {
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum):
		return damaged(path, "not a valid database file")
	case errors.Is(err, bolterrors.ErrVersionMismatch):
		return damaged(path, "unknown database format version")
	}
	return err
}

// guard runs f, which reads the mapped data file, and turns a panic into
// a DamagedError. The header check (datafile.go) catches empty, truncated
// and foreign files before bbolt maps them; corrupt pages behind a sound
// header still make bbolt panic, or fault on a page outside the file,
// which SetPanicOnFault makes a panic this goroutine can recover.
func guard(path string, f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = damaged(path, "unreadable pages: %s", firstLine(fmt.Sprint(r), 100))
		}
	}()
	return f()
}

// firstLine keeps an error's text to one short line.
func firstLine(s string, max int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
