package daemon

import (
	"context"
	"log/slog"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed"
	"github.com/seatd/seatd/server/embedded"
)

func (c *Config) mode() string {
	if c.Distributed() {
		return "distributed"
	}
	return "embedded"
}

// openStore opens the store the configuration selects. Its errors name the
// data dir or the server that failed.
func openStore(ctx context.Context, cfg Config, log *slog.Logger) (server.Store, error) {
	if !cfg.Distributed() {
		s, err := embedded.Open(cfg.DataDir, embedded.Options{Logger: log, HeartbeatFlushInterval: cfg.HeartbeatFlushInterval})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	s, err := distributed.Open(ctx, distributed.Options{
		PostgresURL:            cfg.PostgresURL,
		RedisURL:               cfg.RedisURL,
		RedisKeyPrefix:         cfg.RedisKeyPrefix,
		PoolMaxConns:           int32(cfg.PGMaxConns),
		PoolMinConns:           int32(cfg.PGMinConns),
		HeartbeatFlushInterval: cfg.HeartbeatFlushInterval,
		ConnectTimeout:         cfg.ConnectTimeout,
		SkipMigrations:         !cfg.AutoMigrate,
		Logger:                 log,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}
