package daemon

import "github.com/seatd/seatd/server/embedded"

// refuseLostData stops an embedded start on a damaged database, or on a
// missing one in a data dir that was used before (its operator key is
// there), which would otherwise start empty. It runs before Start, which
// writes a new operator key into a fresh dir.
func refuseLostData(cfg Config) error {
	if cfg.Distributed() {
		return nil
	}
	return embedded.CheckDataDir(cfg.DataDir, operatorKeyFile)
}
