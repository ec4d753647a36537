package daemon

import (
	"fmt"
	"log/slog"
)

// fdReserve is the file descriptors seatd keeps for itself beyond its
// client connections and its PostgreSQL pool: the data files, the Redis
// pool, the leader's connection, the pprof port, logs, a margin.
const fdReserve = 1024

// fdLimits is the process's file descriptor limit (RLIMIT_NOFILE): the
// soft one in force, the hard one it may be raised to, and raise.
type fdLimits interface {
	get() (soft, hard uint64, err error)
	raise(soft uint64) error
}

// fitFileLimit keeps the listeners' connection caps (--max-connections on
// each of the two ports) and the reserve under the process's file
// descriptor limit, so that a flood of both ports leaves descriptors for
// the store, the health checks and the accept loops: it raises the soft
// limit when the hard one allows, else lowers --max-connections if it was
// not given (with a warning), else refuses to start naming both numbers.
func fitFileLimit(cfg *Config, lim fdLimits, log *slog.Logger) error {
	soft, hard, err := lim.get()
	if err != nil {
		log.Warn("cannot read the file descriptor limit (RLIMIT_NOFILE); not checked against --max-connections", "err", err)
		return nil
	}
	reserve := uint64(fdReserve + max(cfg.PGMaxConns, 0))
	need := 2*uint64(cfg.MaxConnections) + reserve
	if need > hard {
		fit := int64(hard) - int64(reserve)
		if fit < 2 {
			// Not even one connection per listener fits: no value of
			// --max-connections helps, only a higher limit.
			return fmt.Errorf("seatd needs at least %d file descriptors (%d for the store and pools, and a connection on each of its 2 listeners), over the process limit of %d (RLIMIT_NOFILE): raise the limit to %d or more, %d for --max-connections %d (ulimit -n, systemd LimitNOFILE=)",
				reserve+2, reserve, hard, reserve+2, need, cfg.MaxConnections)
		}
		if cfg.MaxConnectionsGiven {
			return fmt.Errorf("--max-connections %d needs %d file descriptors (2 listeners × %d + %d for the store and pools), over the process limit of %d (RLIMIT_NOFILE): lower --max-connections to at most %d or raise the limit (ulimit -n, systemd LimitNOFILE=)",
				cfg.MaxConnections, need, cfg.MaxConnections, reserve, hard, fit/2)
		}
		log.Warn("--max-connections lowered to fit the file descriptor limit (RLIMIT_NOFILE); raise the limit to keep the default",
			"from", cfg.MaxConnections, "to", fit/2, "limit", hard, "reserve", reserve)
		cfg.MaxConnections = int(fit / 2)
		need = 2*uint64(cfg.MaxConnections) + reserve
	}
	if need > soft {
		if err := lim.raise(need); err != nil {
			return fmt.Errorf("cannot raise the file descriptor limit (RLIMIT_NOFILE) from %d to the %d that --max-connections %d needs: %v", soft, need, cfg.MaxConnections, err)
		}
		log.Info("raised the file descriptor limit (RLIMIT_NOFILE) for --max-connections", "from", soft, "to", need)
	}
	return nil
}
