package server

// NextFileInForce judges next as the license file to put in force after
// cur (SetFileInForce), for every store alike: changed is false when next
// is cur already (nothing to write); FileNotNewer when next's serial is
// below cur's, or equal with another hash; EINVALID for a record no file
// has (a serial below 1, no hash).
func NextFileInForce(cur, next LicenseFileRecord) (changed bool, err error) {
	switch {
	case next.Serial < 1:
		return false, Invalid("license_file.serial", "must be at least 1")
	case next.Hash == "":
		return false, Invalid("license_file.hash", "is required")
	case next.Serial == cur.Serial && next.Hash == cur.Hash:
		return false, nil
	case next.Serial <= cur.Serial:
		return false, FileNotNewer(next.Serial, cur)
	}
	return true, nil
}
