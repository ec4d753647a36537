package distributed

import (
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// The Lua scripts. Each one works atomically on the keys of one license
// (lua/common.lua describes them) and is run with EVALSHA, falling back to
// EVAL when Redis does not know it yet (a restart, SCRIPT FLUSH).
var (
	scriptAcquire   = loadScript("acquire")
	scriptHeartbeat = loadScript("heartbeat")
	scriptCheck     = loadScript("check")
	scriptEnd       = loadScript("end")
	scriptExpire    = loadScript("expire")
	scriptDue       = loadScript("due")
	scriptPeek      = loadScript("peek")
	scriptCount     = loadScript("count")
	scriptRebuild   = loadScript("rebuild")
	scriptSetConf   = loadScript("setconf")
	scriptTombstone = loadScript("tombstone")
	scriptAdopt     = loadScript("adopt")
	scriptState     = loadScript("state")
	scriptNoop      = loadScript("noop") // make bench's ceiling only

	// These two work on the global expiry hint, not on a license.
	scriptHint    = loadPlainScript("hint")
	scriptFixHint = loadPlainScript("fixhint")
)

func loadPlainScript(name string) *redis.Script {
	body, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("distributed: embedded lua/%s.lua: %v", name, err))
	}
	return redis.NewScript(string(body))
}

func loadScript(name string) *redis.Script {
	common, err := luaFS.ReadFile("lua/common.lua")
	if err != nil {
		panic(fmt.Sprintf("distributed: embedded lua/common.lua: %v", err))
	}
	body, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("distributed: embedded lua/%s.lua: %v", name, err))
	}
	return redis.NewScript(string(common) + "\n" + string(body))
}
