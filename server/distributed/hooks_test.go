package distributed

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// scriptHook runs before (which may fail the call) and after (only if Redis
// ran it) every call of one script, alone or in a pipeline (failing the
// whole pipeline), whether it goes as EVALSHA or as EVAL (the fallback
// after NOSCRIPT).
type scriptHook struct {
	sha    string
	before func() error
	after  func()
}

func isScript(cmd redis.Cmder, sha string) bool {
	args := cmd.Args()
	name := strings.ToLower(cmd.Name())
	if len(args) < 2 || !strings.HasPrefix(name, "eval") {
		return false
	}
	s, _ := args[1].(string)
	if name == "evalsha" || name == "evalsha_ro" {
		return s == sha
	}
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:]) == sha
}

func (h *scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.around([]redis.Cmder{cmd}, func() error { return next(ctx, cmd) })
	}
}

func (h *scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.around(cmds, func() error { return next(ctx, cmds) })
	}
}

func (h *scriptHook) around(cmds []redis.Cmder, run func() error) error {
	found := false
	for _, c := range cmds {
		found = found || isScript(c, h.sha)
	}
	if !found {
		return run()
	}
	if h.before != nil {
		if err := h.before(); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
	}
	err := run()
	// Only after a call Redis ran: another test's SCRIPT FLUSH on the
	// shared Redis can make an EVALSHA fail with NOSCRIPT, and the EVAL
	// that follows is the call that counts.
	if err == nil && h.after != nil {
		h.after()
	}
	return err
}

// failScript fails every call of one script while on is set, and counts
// the calls it failed.
type failScript struct {
	scriptHook
	on      atomic.Bool
	refused atomic.Int64
}

var errScriptRefused = errors.New("injected: Redis unreachable")

func newFailScript(script *redis.Script) *failScript {
	f := &failScript{}
	f.scriptHook = scriptHook{sha: script.Hash(), before: func() error {
		if f.on.Load() {
			f.refused.Add(1)
			return errScriptRefused
		}
		return nil
	}}
	return f
}

// onScript runs f once, just before the first call of script reaches Redis.
func onScript(script *redis.Script, f func()) *scriptHook {
	var once sync.Once
	return &scriptHook{sha: script.Hash(), before: func() error { once.Do(f); return nil }}
}
