package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

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
	// OwnHandBack: the policy has rules of the scope, so a live lease of
	// the acquisition's keys is handed back only to its own user and host
	// (server.LeaseStore's policy section); another's grant replaces it.
	OwnHandBack bool
	// GroupsWanted, if not nil, says whether acquire_pools.lua wants the
	// members of the groups capped as a whole: until it is set they are
	// left out (a group of 100 members is most of a decision, and the
	// script needs them only once the scope's holders of the cap's kind
	// reach its limit: it answers StatusNeedNames, AcquirePoolSet sets it
	// and asks again with them, and from then on they are sent). One flag
	// per license version (the caller's): nil sends them always.
	GroupsWanted *atomic.Bool
}

// StatusNeedNames is acquire_pools.lua's answer to an acquisition whose
// decision left a group's members out when its count needed them
// (Judgement.GroupsWanted): nothing was written; AcquirePoolSet asks
// again with them.
const StatusNeedNames Status = "NEEDNAMES"

// JudgedCap is a cap of a Judgement.
type JudgedCap struct {
	Host  bool
	Limit int
	Names Names
	// Group: Names are a group's members, a cap of the group as a whole.
	Group bool
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
// user, host, refused, pool names, caps, reservations, own hand-back]. A
// cap's names are a list, or for a group capped as a whole its members'
// list as a string, or, when withhold, the number of its members
// (policy.lua count_names: the script asks for them if it needs them).
func (j *Judgement) encode(poolNames []byte, withhold bool) []byte {
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
		switch {
		case len(c.Names) == 0:
			b = append(b, "[]"...)
		case c.Group && withhold:
			b = append(b, '0')
		case c.Group:
			// A group's members, as a string the script decodes only
			// when the count needs them (policy.lua count_names): most
			// acquisitions judge the cap on the scope's holders alone.
			b = appendJSONString(b, string(c.Names))
		default:
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
	if j.OwnHandBack {
		return append(b, "],1]"...)
	}
	return append(b, "],0]"...)
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
	to = append(to, h.Scope+"\x00i\x00"+h.User+"\x00"+strings.ToLower(h.Host)+tail)
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

// DropPolicyIndex removes the policy index of a license whose policy
// went, if its live settings still say it has none (policy_drop.lua): a
// late drop must not take the index of a policy switched on again, some
// of whose members (leases granted, not yet recorded) no build from the
// record would bring back.
func (rs *Redis) DropPolicyIndex(ctx context.Context, licenseID string) error {
	keys := append([]string{rs.keysOf(licenseID)[0]}, rs.keys.Policy(licenseID)...)
	return scriptPolicyDrop.Run(ctx, rs.rdb, keys).Err()
}

// PrunePolicyIndex removes from the policy index of a license the members
// whose lease is no longer in its pool (pools: every pool of the license
// at its settings version, read together), up to limit members a call
// after the member after (” from the first): the next place to go on
// from (” done) and how many it removed (policy_prune.lua). It removes
// nothing while Redis holds another settings version of the license: a
// grant created since the pools were read may have live leases already.
func (rs *Redis) PrunePolicyIndex(ctx context.Context, licenseID string, version int64, pools []string, after string, limit int) (next string, removed int, err error) {
	keys := append(rs.keys.Policy(licenseID), rs.keysOf(licenseID)[0])
	args := []any{after, limit, version}
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

// Revival is Revive's answer: the Beat, unless the license's live state
// says otherwise (Status StatusNoState with NoState, StatusDeleted with
// DeletedPool, StatusStale with RedisVersion, StatusNoPolicyIndex), as
// AcquirePoolSet's.
type Revival struct {
	Beat
	NoState      []string
	DeletedPool  string
	RedisVersion int64
}

// Revive judges the revival of the lapsed lease leaseID of pool poolID
// (one of set's) of a license with a site policy, as heartbeat.lua would
// revive it, and only if the policy's decision j on its client (the
// reservation it may take: only its own) would grant it a seat now
// (revive.lua). set is the PoolSet of the lease's feature and version
// (NewPolicyPoolSet; j nil if the license has no policy any more).
func (rs *Redis) Revive(ctx context.Context, set *PoolSet, poolID, leaseID, tokenHash string, j *Judgement) (Revival, error) {
	at := 0
	for i := 1; i <= len(set.pools)+len(set.others); i++ {
		if set.at(i) == poolID {
			at = i
		}
	}
	if at == 0 {
		return Revival{}, fmt.Errorf("revive: pool %s is not of the set", poolID)
	}
	decision := ""
	if j != nil {
		decision = string(j.encode(set.names, false))
	}
	res, err := scriptRevive.Run(ctx, rs.rdb, set.keys, strconv.FormatInt(set.version, 10), len(set.pools),
		len(set.pools)+len(set.others), at, leaseKey(leaseID), tokenKey(tokenHash), decision).Slice()
	if err != nil {
		return Revival{}, err
	}
	poolOf := func(v any) string {
		if i := int(replyInt(v)); i > 0 {
			return set.at(i)
		}
		return set.licenseID
	}
	var out Revival
	switch st := Status(replyString(res[0])); st {
	case StatusNoState:
		out.Status = st
		for _, v := range res[1:] {
			out.NoState = append(out.NoState, poolOf(v))
		}
	case StatusDeleted:
		out.Status, out.DeletedPool = st, poolOf(res[1])
	case StatusStale:
		out.Status, out.RedisVersion = st, replyInt(res[1])
	case StatusNoPolicyIndex:
		out.Status = st
	default:
		if len(res) < 5 {
			return Revival{}, fmt.Errorf("revive.lua: unexpected reply %v", res)
		}
		code := replyInt(res[1])
		if code < 0 || code >= int64(len(beatStatuses)) {
			return Revival{}, fmt.Errorf("revive.lua: unexpected code %d", code)
		}
		out.Status = beatStatuses[code]
		if out.Status == StatusRenewed {
			now := replyInt(res[2])
			out.Heartbeat, out.Deadline, out.PrevFirst = usTime(now), usTime(now+replyInt(res[3])), replyInt(res[4])
		}
	}
	return out, nil
}
