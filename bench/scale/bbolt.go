package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bboltRows (embedded, seatd stopped) opens seatd.db read-only and says
// what the file is made of: per bucket, its keys and the bytes of its
// pages (leaf and branch, in use of allocated), largest first, then the
// pages no bucket holds (free, bbolt's own, the tail past its last page).
func (r *run) bboltRows() error {
	path := filepath.Join(r.cfg.dataDir, "seatd.db")
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("bbolt breakdown: %w", err)
	}
	defer func() { _ = db.Close() }()
	type bucket struct {
		name string
		st   bolt.BucketStats
	}
	var (
		buckets  []bucket
		pageSize int
		used     int64 // the pages up to the high-water mark; the file may be longer
	)
	err = db.View(func(tx *bolt.Tx) error {
		pageSize, used = tx.DB().Info().PageSize, tx.Size()
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			buckets = append(buckets, bucket{string(name), b.Stats()})
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("bbolt breakdown: %w", err)
	}
	alloc := func(s bolt.BucketStats) int { return s.LeafAlloc + s.BranchAlloc }
	slices.SortFunc(buckets, func(a, b bucket) int { return alloc(b.st) - alloc(a.st) })
	n := float64(r.cfg.leases)
	inBuckets := 0
	for _, b := range buckets {
		s := b.st
		inBuckets += alloc(s)
		if alloc(s) < 1<<20 && s.KeyN < r.cfg.leases/100 {
			continue // a few pages: not what the file is made of
		}
		fill := 0.0
		if s.LeafAlloc > 0 {
			fill = 100 * float64(s.LeafInuse) / float64(s.LeafAlloc)
		}
		r.add(fmt.Sprintf("bbolt bucket %s (at the restart, bucket.Stats)", b.name),
			fmt.Sprintf("%s: %s keys, leaves %s in use of %s (%.0f %%), branches %s of %s, depth %d",
				size(float64(alloc(s))/n)+"/lease", count(s.KeyN), size(float64(s.LeafInuse)), size(float64(s.LeafAlloc)), fill,
				size(float64(s.BranchInuse)), size(float64(s.BranchAlloc)), s.Depth), "", "")
	}
	st := db.Stats()
	free := int64(st.FreePageN+st.PendingPageN) * int64(pageSize)
	r.add("bbolt file at the restart: buckets, free pages, bbolt's own pages (meta, freelist, root), the unused tail (its growth step)",
		fmt.Sprintf("%s: buckets %s, free %s, own %s, tail %s", size(float64(fi.Size())), size(float64(inBuckets)), size(float64(free)),
			size(float64(used-int64(inBuckets)-free)), size(float64(fi.Size()-used))), "", "")
	return nil
}
