package live

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/seatd/seatd/server"
)

// Site policies in the live state. A license with a policy is acquired
// only through acquire_pools.lua (acquire.lua answers StatusPolicy), which
// judges each acquisition's Judgement, in the same atomic step as the
// count, with the counts it reads from the license's policy index: the
// holders of its live leases by scope, user, host and reservation
// (lua/acquire_pools.lua describes it). The index is built from the
// record (BuildPolicyIndex) whenever its marker does not hold the
// generation of the license's policy: first use, a loss of Redis, a
// rebuild of a pool. Members of ended leases are removed as acquisitions
// meet them, and by PrunePolicyIndex.

// Judgement is a policy's decision on one acquisition (server.Decision)
// as acquire_pools.lua takes it.
type Judgement struct {
	Scope   string // the feature ("" the base pool)
	User    string
	Host    string // lower-cased
	Refused bool   // the decision refuses before any count
	// Caps are the decision's caps, in order: each counts the live leases
	// of the scope held by any of Names (users, or hosts when Host).
	Caps []JudgedCap
	// Reservations are the decision's, in order.
	Reservations []JudgedReservation
}

// JudgedCap is a cap of a Judgement.
type JudgedCap struct {
	Host  bool
	Limit int
	Names Names
}

// JudgedReservation is a reservation of a Judgement.
type JudgedReservation struct {
	Key    string
	Seats  int
	Member bool
}

// Names is a list of users or hosts as a Judgement carries them (hosts
// lower-cased): encode once the members of a group (EncodeNames), a cap of
// the group as a whole names them on every acquisition.
type Names []byte

// EncodeNames encodes names for a JudgedCap.
func EncodeNames(names ...string) Names {
	if len(names) == 0 {
		return Names("[]")
	}
	b, _ := json.Marshal(names) // a list of strings always encodes
	return b
}

// encode is the decision as acquire_pools.lua decodes it (JSON): [scope,
// user, host, refused, pool names, caps, reservations].
func (j *Judgement) encode(poolNames []byte) []byte {
	b := make([]byte, 0, 128+len(poolNames))
	b = append(b, '[')
	b = appendJSONString(b, j.Scope)
	b = append(b, ',')
	b = appendJSONString(b, j.User)
	b = append(b, ',')
	b = appendJSONString(b, j.Host)
	if j.Refused {
		b = append(b, ",1,"...)
	} else {
		b = append(b, ",0,"...)
	}
	b = append(b, poolNames...)
	b = append(b, ",["...)
	for i, c := range j.Caps {
		if i > 0 {
			b = append(b, ',')
		}
		if c.Host {
			b = append(b, `["h",`...)
		} else {
			b = append(b, `["u",`...)
		}
		b = strconv.AppendInt(b, int64(c.Limit), 10)
		b = append(b, ',')
		if len(c.Names) == 0 {
			b = append(b, "[]"...)
		} else {
			b = append(b, c.Names...)
		}
		b = append(b, ']')
	}
	b = append(b, "],["...)
	for i, r := range j.Reservations {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendJSONString(b, r.Key)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.Seats), 10)
		if r.Member {
			b = append(b, ",1]"...)
		} else {
			b = append(b, ",0]"...)
		}
	}
	return append(b, "]]"...)
}

func appendJSONString(b []byte, s string) []byte {
	js, _ := json.Marshal(s) // a string always encodes
	return append(b, js...)
}

// indexPoolName is a pool's name in the policy index: ” for a license's
// own pool, else its grant's id after the dot.
func indexPoolName(poolID string) string {
	_, name, _ := strings.Cut(poolID, ".")
	return name
}

// replyInts reads an array of integers of a script reply.
func replyInts(v any) []int {
	a, _ := v.([]any)
	out := make([]int, len(a))
	for i, x := range a {
		out[i] = int(replyInt(x))
	}
	return out
}

// PolicyHolder is an active lease as the policy index holds it.
type PolicyHolder struct {
	Scope       string // the feature of its pool ("" the license's base pool)
	PoolID      string
	LeaseID     string
	User, Host  string
	Reservation string
}

// members are the holder's index members (lua/acquire_pools.lua).
func (h PolicyHolder) members(to []any) []any {
	tail := "\x00" + indexPoolName(h.PoolID) + "\x00" + leaseKey(h.LeaseID)
	if h.User != "" {
		to = append(to, h.Scope+"\x00u\x00"+h.User+tail)
	}
	if h.Host != "" {
		to = append(to, h.Scope+"\x00h\x00"+strings.ToLower(h.Host)+tail)
	}
	if h.Reservation != "" {
		to = append(to, h.Scope+"\x00r\x00"+h.Reservation+tail)
	}
	return to
}

// ErrPolicyIndexLost is BuildPolicyIndex's answer when the index's marker
// went while it wrote (Redis lost it, or a pool of the license was
// rebuilt): read a new snapshot.
var ErrPolicyIndexLost = errors.New("write policy index: its marker went meanwhile (Redis lost it, or a pool was rebuilt)")

// policyChunk is how many holders one call of policy_index.lua writes.
const policyChunk = 500

// BeginPolicyIndex starts (or joins) a build of the license's policy
// index for its policy generation gen, before the snapshot of the record
// is read: the token to write with, or built when the index is built for
// gen already.
func (rs *Redis) BeginPolicyIndex(ctx context.Context, licenseID string, gen int64) (token string, built bool, err error) {
	res, err := scriptPolicyIndex.Run(ctx, rs.rdb, rs.keys.Policy(licenseID), "begin", server.NewID("pol"), gen).Slice()
	if err != nil {
		return "", false, err
	}
	if replyString(res[0]) == "BUILT" {
		return "", true, nil
	}
	return replyString(res[1]), false, nil
}

// WritePolicyIndex writes the holders into the license's policy index,
// a chunk a call, then marks it built for gen (policy_index.lua).
// ErrPolicyIndexLost: start again.
func (rs *Redis) WritePolicyIndex(ctx context.Context, licenseID, token string, gen int64, holders []PolicyHolder) error {
	keys := rs.keys.Policy(licenseID)
	for start := 0; ; start += policyChunk {
		op := "end" // once every holder is written
		args := []any{op, token, gen}
		if start < len(holders) {
			args[0] = "add"
			for _, h := range holders[start:min(start+policyChunk, len(holders))] {
				args = h.members(args)
			}
		}
		res, err := scriptPolicyIndex.Run(ctx, rs.rdb, keys, args...).Text()
		switch {
		case err != nil:
			return err
		case res == "LOST":
			return ErrPolicyIndexLost
		case args[0] == "end":
			return nil
		}
	}
}

// DropPolicyIndex removes the policy index of a license (whose policy
// went: a policy switched on again has a new generation, and its index is
// built anew).
func (rs *Redis) DropPolicyIndex(ctx context.Context, licenseID string) error {
	return rs.rdb.Unlink(ctx, rs.keys.Policy(licenseID)...).Err()
}

// PrunePolicyIndex removes from the policy index of a license the members
// whose lease is no longer in its pool (pools: every pool of the license),
// up to limit members a call after the member after (” from the first):
// the next place to go on from (” done) and how many it removed
// (policy_prune.lua).
func (rs *Redis) PrunePolicyIndex(ctx context.Context, licenseID string, pools []string, after string, limit int) (next string, removed int, err error) {
	keys := rs.keys.Policy(licenseID)
	args := []any{after, limit}
	for _, p := range pools {
		keys = append(keys, rs.keysOf(p)[2])
		args = append(args, indexPoolName(p))
	}
	res, err := scriptPolicyPrune.Run(ctx, rs.rdb, keys, args...).Slice()
	if err != nil {
		return "", 0, err
	}
	return replyString(res[0]), int(replyInt(res[1])), nil
}
