package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
)

// bbolt's on-disk header, as bbolt itself validates it on open (its
// internal/common meta.go): every page starts with a 16-byte page header;
// pages 0 and 1 hold a meta each, written alternately, checksummed with
// FNV-64a. Reading it ourselves lets Open refuse an empty, truncated or
// foreign file with a clear error instead of letting bbolt map it and
// fault on pages past the end of the file (SIGBUS, not recoverable).
// It reads two small blocks, so a start stays fast however large the
// database; a full tx.Check is O(size) and is left to restore.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	metaSize       = 64 // magic … txid, then the checksum of those 56 bytes
	noFreelist     = ^uint64(0)
)

type boltMeta struct {
	magic, version, pageSize uint32
	root, freelist, pgid     uint64
	txid                     uint64
	sound                    bool // magic, version and checksum hold
}

func parseMeta(b []byte) boltMeta {
	if len(b) < pageHeaderSize+metaSize {
		return boltMeta{}
	}
	b = b[pageHeaderSize : pageHeaderSize+metaSize]
	le := binary.NativeEndian // bbolt writes its structs in host order
	m := boltMeta{
		magic: le.Uint32(b[0:]), version: le.Uint32(b[4:]), pageSize: le.Uint32(b[8:]),
		root: le.Uint64(b[16:]), freelist: le.Uint64(b[32:]), pgid: le.Uint64(b[40:]), txid: le.Uint64(b[48:]),
	}
	h := fnv.New64a()
	_, _ = h.Write(b[:56])
	m.sound = m.magic == boltMagic && m.version == boltVersion && h.Sum64() == le.Uint64(b[56:])
	return m
}

// checkDataFile returns nil for a missing file (Open creates it) or one
// whose header is sound and whose size covers every page it claims, and
// a DamagedError otherwise.
func checkDataFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read data file %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read data file %s: %w", path, err)
	}
	size := st.Size()
	if size == 0 {
		return damaged(path, "the file is empty")
	}
	meta, ok := readMeta(f, size)
	if !ok {
		return damaged(path, "no valid header: not a seatd database, or overwritten")
	}
	if meta.pgid > uint64(size)/uint64(meta.pageSize) {
		return damaged(path, "truncated: %d bytes of the %d its header records", size, meta.pgid*uint64(meta.pageSize))
	}
	if meta.root >= meta.pgid || (meta.freelist != noFreelist && meta.freelist >= meta.pgid) {
		return damaged(path, "its header points past the end of the data")
	}
	return nil
}

// readMeta finds the meta bbolt would use: the sound one with the higher
// transaction id. Like bbolt, it takes the page size from the first sound
// meta it finds (page 0, or page 1 at each possible page size).
func readMeta(f io.ReaderAt, size int64) (boltMeta, bool) {
	read := func(off int64) boltMeta {
		buf := make([]byte, pageHeaderSize+metaSize)
		if off+int64(len(buf)) > size {
			return boltMeta{}
		}
		if _, err := f.ReadAt(buf, off); err != nil {
			return boltMeta{}
		}
		return parseMeta(buf)
	}
	first := read(0)
	for i := 0; !first.sound && i <= 14; i++ {
		first = read(1024 << i)
	}
	if !first.sound || first.pageSize < 512 || first.pageSize&(first.pageSize-1) != 0 {
		return boltMeta{}, false
	}
	best := boltMeta{}
	for _, m := range []boltMeta{read(0), read(int64(first.pageSize))} {
		if m.sound && m.pageSize == first.pageSize && (!best.sound || m.txid > best.txid) {
			best = m
		}
	}
	return best, best.sound
}
