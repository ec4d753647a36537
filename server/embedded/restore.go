package embedded

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// CheckBackup returns nil if file is a sound seatd database: a sound
// header, a schema this seatd reads (1, which Open migrates, or 2), every
// bucket of that schema, every key and value readable, and bbolt's full
// consistency check (restore is offline and rare, so its cost, a walk of
// every page, is fine here).
// The walk runs first, under guard: tx.Check reads pages in a goroutine
// of its own, where a fault on a corrupt page id could not be recovered.
func CheckBackup(file string) error {
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("backup file %s: %w", file, errors.Unwrap(err))
	}
	if err := checkBackupHeader(file); err != nil {
		return err
	}
	var db *bolt.DB
	err := guard(file, func() (err error) {
		db, err = bolt.Open(file, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: lockTimeout})
		return err
	})
	if err != nil {
		return notABackup(file, boltDamage(file, err))
	}
	defer func() { _ = guard(file, db.Close) }()
	return guard(file, func() error {
		return db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketMeta) == nil {
				return notABackup(file, fmt.Errorf("it has no %q bucket", bucketMeta))
			}
			v := bytesUint64(tx.Bucket(bucketMeta).Get(keySchema))
			required, ok := schemaBuckets[v]
			if !ok {
				return notABackup(file, fmt.Errorf("schema version %d; this seatd reads 1 to %d", v, schemaVersion))
			}
			for _, name := range required {
				if tx.Bucket(name) == nil {
					return notABackup(file, fmt.Errorf("it has no %q bucket", name))
				}
			}
			if err := tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walk(b) }); err != nil {
				return notABackup(file, err)
			}
			var first error
			for err := range tx.Check() { // drained: Check's goroutine sends every error
				first = cmp.Or(first, err)
			}
			if first != nil {
				return notABackup(file, fmt.Errorf("consistency check: %w", first))
			}
			return nil
		})
	})
}

// walk reads every key and value of b and of the buckets inside it.
func walk(b *bolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			if inner := b.Bucket(k); inner != nil {
				return walk(inner)
			}
		}
		return nil
	})
}

func checkBackupHeader(file string) error {
	err := checkDataFile(file)
	var d *DamagedError
	if errors.As(err, &d) {
		return notABackup(file, errors.New(d.Reason))
	}
	return err
}

func notABackup(file string, why error) error {
	var d *DamagedError
	if errors.As(why, &d) {
		why = errors.New(d.Reason)
	}
	return fmt.Errorf("%s is not a sound seatd backup: %w", file, why)
}

// Restore replaces dir's database with a copy of file, which CheckBackup
// has passed. The data dir must not be in use: it refuses while a seatd
// holds the database's lock. The database it replaces (if any) is kept
// beside it as seatd.db.before-restore-<timestamp>, whose name it returns.
// At every instant dir holds either the old database or the new one.
func Restore(dir, file string, now time.Time) (kept string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create data dir %s: %w", dir, err)
	}
	target := filepath.Join(dir, dbFileName)
	// Read before the lock, which a read would wait for: a seatd that
	// starts meanwhile makes lockIdle refuse.
	carry := lockedModeOf(target)
	unlock, err := lockIdle(target)
	if err != nil {
		return "", err
	}
	defer unlock()

	tmp := target + ".restoring"
	if err := copyFileSynced(file, tmp); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	if err := carry.into(tmp); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	if _, err := os.Stat(target); err == nil {
		kept = target + ".before-restore-" + now.UTC().Format("20060102T150405Z")
		// A hard link keeps the old file under its new name while
		// seatd.db still names it; the rename below then swaps
		// seatd.db over in one step.
		if err := os.Link(target, kept); err != nil {
			_ = os.Remove(tmp)
			return "", fmt.Errorf("keep the current database as %s: %w", kept, err)
		}
	}
	if err := os.Rename(tmp, target); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("replace %s: %w", target, err)
	}
	return kept, syncDir(dir)
}

// copyFileSynced copies src to a new file dst and fsyncs it.
func copyFileSynced(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("read backup: %w", err)
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := out.Sync(); err != nil {
		_ = out.Close()
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return nil
}

// syncDir makes renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync data dir %s: %w", dir, err)
	}
	defer func() { _ = d.Close() }()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync data dir %s: %w", dir, err)
	}
	return nil
}

// lockedMode is what a restore keeps of the database it replaces, for
// locked mode (licensefile.go): its site key, which the license file in
// force names (a backup from before locked mode has none), and its record
// of the file in force, whose serial must not go back with an older
// backup (or an older file, with more seats perhaps, would be accepted
// again). A database that cannot be read (a damaged one, the reason for
// many restores) gives nothing: the backup's own record stands.
type lockedMode struct {
	siteKey, fileInForce []byte
}

func lockedModeOf(path string) (m lockedMode) {
	if _, err := os.Stat(path); err != nil {
		return m
	}
	_ = guard(path, func() error {
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
		if err != nil {
			return err
		}
		defer func() { _ = db.Close() }()
		return db.View(func(tx *bolt.Tx) error {
			if meta := tx.Bucket(bucketMeta); meta != nil {
				m.siteKey = bytes.Clone(meta.Get(keySiteKey))
				m.fileInForce = bytes.Clone(meta.Get(keyFileInForce))
			}
			return nil
		})
	})
	return m
}

// into writes m into the database at path (the restored copy, before
// it is put in place) where it lacks a site key, or holds an older file
// in force.
func (m lockedMode) into(path string) error {
	if m.siteKey == nil && m.fileInForce == nil {
		return nil
	}
	var keep server.LicenseFileRecord
	if m.fileInForce != nil {
		var err error
		if keep, err = decode[server.LicenseFileRecord](m.fileInForce); err != nil {
			m.fileInForce = nil // not ours to judge: the restored copy's stands
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		return fmt.Errorf("restore: open the restored copy: %w", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if m.siteKey != nil && meta.Get(keySiteKey) == nil {
			if err := meta.Put(keySiteKey, m.siteKey); err != nil {
				return err
			}
		}
		if m.fileInForce == nil {
			return nil
		}
		cur, err := fileInForce(meta)
		if err != nil || cur.Serial < keep.Serial {
			return meta.Put(keyFileInForce, m.fileInForce)
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore: keep the license file in force: %w", err)
	}
	return nil
}
