package live

import (
	"embed"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// The Lua scripts. Each one works atomically on the keys of one license
// (lua/common.lua describes them) and is run with EVALSHA, falling back to
// EVAL when Redis does not know it yet (a restart, SCRIPT FLUSH).
var (
	scriptAcquire = loadScript("acquire")
	// A feature's acquisition, over the pools of a license's grants, and
	// any acquisition of a license with a site policy; the revival of a
	// lapsed lease of such a license (lua/policy.lua judges the policy).
	scriptAcquirePools = concat("common", "policy", "acquire_pools")
	scriptRevive       = concat("common", "policy", "revive")
	scriptHeartbeat    = loadScript("heartbeat")
	scriptCheck        = loadScript("check")
	scriptEnd          = loadScript("end")
	scriptExpire       = loadScript("expire")
	scriptTake         = loadScript("take")
	scriptDue          = loadScript("due")
	scriptPeek         = loadScript("peek")
	scriptCount        = loadScript("count")
	scriptRebuild      = loadScript("rebuild")
	scriptSetConf      = loadScript("setconf")
	scriptTombstone    = loadScript("tombstone")
	scriptAdopt        = loadScript("adopt")
	scriptState        = loadScript("state")
	scriptProgress     = loadScript("progress")
	scriptFirsts       = loadScript("firsts") // the earliest deadline, for the reconciliation (Firsts)
	scriptUsable       = loadScript("usable") // a license's state, for a feature no grant covers (Usable)
	scriptNoop         = loadScript("noop")   // make bench's ceiling only

	// These two work on the global expiry hint, not on a license.
	scriptHint    = loadPlainScript("hint")
	scriptFixHint = loadPlainScript("fixhint")

	// A license's site-policy index: built from the record, pruned, dropped.
	scriptPolicyIndex = loadPlainScript("policy_index")
	scriptPolicyPrune = loadPlainScript("policy_prune")
	scriptPolicyDrop  = loadPlainScript("policy_drop")
)

// loadScript is lua/common.lua followed by lua/<name>.lua.
func loadScript(name string) *redis.Script { return concat("common", name) }

// loadPlainScript is lua/<name>.lua alone.
func loadPlainScript(name string) *redis.Script { return concat(name) }

// concat joins embedded scripts into one, in order.
func concat(names ...string) *redis.Script {
	parts := make([]string, len(names))
	for i, name := range names {
		body, err := luaFS.ReadFile("lua/" + name + ".lua")
		if err != nil {
			panic(fmt.Sprintf("live: embedded lua/%s.lua: %v", name, err))
		}
		parts[i] = string(body)
	}
	return redis.NewScript(strings.Join(parts, "\n"))
}

// scriptsByName are the scripts by their file's name, for Script.
var scriptsByName = map[string]*redis.Script{
	"acquire": scriptAcquire, "acquire_pools": scriptAcquirePools, "revive": scriptRevive, "heartbeat": scriptHeartbeat, "check": scriptCheck, "end": scriptEnd,
	"expire": scriptExpire, "take": scriptTake, "due": scriptDue, "peek": scriptPeek, "count": scriptCount,
	"rebuild": scriptRebuild, "setconf": scriptSetConf, "tombstone": scriptTombstone, "adopt": scriptAdopt,
	"state": scriptState, "progress": scriptProgress, "firsts": scriptFirsts, "usable": scriptUsable, "noop": scriptNoop, "hint": scriptHint, "fixhint": scriptFixHint,
	"policy_index": scriptPolicyIndex, "policy_prune": scriptPolicyPrune, "policy_drop": scriptPolicyDrop,
}

// Script returns lua/<name>.lua as the store runs it, for tests that
// watch for it (fault hooks match its hash) or run it themselves. It
// panics for a name that is not a script.
func Script(name string) *redis.Script {
	s, ok := scriptsByName[name]
	if !ok {
		panic("live: no script " + name)
	}
	return s
}

// ScriptNames are the names Script takes, sorted.
func ScriptNames() []string { return slices.Sorted(maps.Keys(scriptsByName)) }

// Keys is the key layout the live state uses.
func (rs *Redis) Keys() Keyspace { return rs.keys }
