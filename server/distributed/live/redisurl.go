package live

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Dial makes a client for a seatd Redis URL:
//
//	redis://[user:pass@]host:port/db           one server (rediss:// for TLS)
//	redis+cluster://host:port?addr=host2:port  a Redis Cluster (rediss+cluster://
//	                                           for TLS); any one node is enough,
//	                                           more addr= seed nodes are better
//
// A redis:// URL with addr= parameters is a cluster too. addr is the first
// node, for messages. Nothing is dialled yet.
func Dial(rawURL string) (rdb redis.UniversalClient, addr string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("bad Redis URL: %w", err)
	}
	cluster := u.Query().Has("addr")
	if scheme, ok := strings.CutSuffix(u.Scheme, "+cluster"); ok {
		u.Scheme, cluster = scheme, true
	}
	if !cluster {
		o, err := redis.ParseURL(u.String())
		if err != nil {
			return nil, "", fmt.Errorf("bad Redis URL: %w", err)
		}
		return redis.NewClient(o), o.Addr, nil
	}
	o, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, "", fmt.Errorf("bad Redis Cluster URL: %w", err)
	}
	return redis.NewClusterClient(o), strings.Join(o.Addrs, ","), nil
}

// Ping checks that Redis answers: on a cluster, every master, and the
// cluster says it serves every slot.
func Ping(ctx context.Context, rdb redis.UniversalClient) error {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return rdb.Ping(ctx).Err()
	}
	info, err := cc.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return errors.New("the Redis Cluster is not ready (cluster_state is not ok)")
	}
	return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
}

// Addr names the server(s) of a client that was opened elsewhere, for
// messages ("" for none).
func Addr(rdb redis.UniversalClient) string {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	}
	return ""
}
