package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CheckDataDir refuses a data dir whose database is damaged, or missing
// while the dir shows earlier use: one of the files named in traces
// (which other parts of seatd leave there, such as the operator key), or
// a seatd.db.* file (a copy kept by restore). Open would otherwise
// create an empty database and serve as if nothing had been there. A dir
// that does not exist or holds none of these starts fresh.
//
// Call it before anything writes its own files into the dir.
func CheckDataDir(dir string, traces ...string) error {
	path := filepath.Join(dir, dbFileName)
	_, err := os.Stat(path)
	if err == nil {
		return checkDataFile(path)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("data dir %s is not usable: %w", dir, err)
	}
	found := func() string {
		for _, name := range traces {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return filepath.Join(dir, name)
			}
		}
		kept, _ := filepath.Glob(filepath.Join(dir, dbFileName+".*"))
		if len(kept) > 0 {
			return kept[0]
		}
		return ""
	}()
	if found == "" {
		return nil
	}
	return fmt.Errorf("data file %s is missing, but %s shows the data dir was used before: %s", path, found, advice(dir))
}
