package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

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

// openStore opens the store the configuration selects. In distributed mode
// it also opens the process's one Redis client, which the store, the wait
// queues and the revocation news share: the caller closes it, after the
// store. Its errors name the data dir or the server that failed.
func openStore(ctx context.Context, cfg Config, log *slog.Logger) (server.Store, redis.UniversalClient, error) {
	if !cfg.Distributed() {
		s, err := embedded.Open(cfg.DataDir, embedded.Options{
			Logger: log, HeartbeatFlushInterval: cfg.HeartbeatFlushInterval, WriteFailureWindow: cfg.WriteFailureWindow,
			VerifyPages: cfg.VerifyDataFile,
		})
		if err != nil {
			return nil, nil, err
		}
		return s, nil, nil
	}
	var rdb redis.UniversalClient
	if cfg.RedisURL != "" { // else the store names what is missing
		var err error
		if rdb, _, err = distributed.OpenRedis(cfg.RedisURL); err != nil {
			return nil, nil, fmt.Errorf("distributed store: %w", err)
		}
	}
	s, err := distributed.Open(ctx, distributed.Options{
		PostgresURL:            cfg.PostgresURL,
		RedisURL:               cfg.RedisURL,
		Redis:                  rdb,
		RedisKeyPrefix:         cfg.RedisKeyPrefix,
		PoolMaxConns:           int32(cfg.PGMaxConns),
		PoolMinConns:           int32(cfg.PGMinConns),
		HeartbeatFlushInterval: cfg.HeartbeatFlushInterval,
		LeaseCacheSize:         cfg.LeaseCacheSize,
		EndRepairBatch:         cfg.EndRepairBatch,
		ConnectTimeout:         cfg.ConnectTimeout,
		SkipMigrations:         !cfg.AutoMigrate,
		Logger:                 log,
	})
	if err != nil {
		if rdb != nil {
			_ = rdb.Close()
		}
		return nil, nil, err
	}
	return s, rdb, nil
}
