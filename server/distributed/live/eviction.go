package live

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CheckEviction refuses a Redis that may evict keys at will: seatd's live
// leases are its only copy of heartbeats not yet written behind, and a
// license whose keys vanish is rebuilt with the write-behind slack (its
// zombies count again for a while) — correct, but not something to happen
// whenever Redis is short of memory. allkeys-* policies are refused;
// volatile-* ones evict only keys with a TTL, and seatd sets none, so they
// are accepted. A Redis that does not let seatd read its configuration
// (managed services often rename CONFIG) gets a warning. On a cluster
// every master is checked.
func CheckEviction(ctx context.Context, rdb redis.UniversalClient, log *slog.Logger) error {
	check := func(ctx context.Context, c *redis.Client) error {
		res, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			log.Warn("distributed store: cannot read Redis maxmemory-policy; make sure it is noeviction",
				"redis", c.Options().Addr, "err", err)
			return nil
		}
		policy := res["maxmemory-policy"]
		switch {
		case strings.HasPrefix(policy, "allkeys-"):
			return fmt.Errorf("redis at %s may evict any key (maxmemory-policy %s): seatd's live leases would vanish under memory pressure; set maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction)",
				c.Options().Addr, policy)
		}
		return nil
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, check)
	}
	c, ok := rdb.(*redis.Client)
	if !ok {
		return nil
	}
	return check(ctx, c)
}
