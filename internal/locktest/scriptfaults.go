package locktest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/scripts"
)

// ErrInjected is the error of a script call failed by ScriptFaults.
var ErrInjected = errors.New("locktest: injected fault")

// ScriptFaults is a go-redis hook that fails chosen scripts' calls: before
// they are sent (Redis never sees them), or after Redis has applied them
// (their reply is lost). Each armed fault fires once. Add it with AddHook;
// its zero value has nothing armed.
type ScriptFaults struct {
	mu     sync.Mutex
	before map[string]int    // SHA -> calls to fail before sending
	after  map[string]int    // SHA -> calls whose reply to lose
	held   [][]any           // the arguments of calls failed before sending
	delay  map[string]delays // SHA -> how late the next call reaches Redis, and its reply comes
}

// FailBefore makes the next call of script name fail without being sent.
func (f *ScriptFaults) FailBefore(name string) { f.arm(&f.before, name) }

// FailAfter makes the next call of script name reach Redis and be applied,
// and then fail as if its reply were lost.
func (f *ScriptFaults) FailAfter(name string) { f.arm(&f.after, name) }

func (f *ScriptFaults) arm(m *map[string]int, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *m == nil {
		*m = make(map[string]int)
	}
	(*m)[scripts.SHA(name)]++
}

// DelayRequest makes the next call of script name reach Redis d after it
// was sent, its reply coming at once, as when Redis stalls (paused,
// swapping) between a request and its reply.
func (f *ScriptFaults) DelayRequest(name string, d time.Duration) { f.arm2(name, d, 0) }

// DelayReply makes the reply of the next call of script name arrive d after
// Redis applied it, as a slow network does.
func (f *ScriptFaults) DelayReply(name string, d time.Duration) { f.arm2(name, 0, d) }

type delays struct{ before, after time.Duration }

func (f *ScriptFaults) arm2(name string, before, after time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.delay == nil {
		f.delay = make(map[string]delays)
	}
	f.delay[scripts.SHA(name)] = delays{before, after}
}

// delayed returns and disarms the delays armed for cmd's script.
func (f *ScriptFaults) delayed(cmd redis.Cmder) delays {
	args := cmd.Args()
	if len(args) < 2 || !strings.EqualFold(cmd.Name(), "evalsha") {
		return delays{}
	}
	sha, _ := args[1].(string)
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.delay[sha]
	delete(f.delay, sha)
	return d
}

// Held returns the arguments of the calls failed before sending, oldest
// first: sending one later (rdb.Do) is a late copy of that request.
func (f *ScriptFaults) Held() [][]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]any(nil), f.held...)
}

// take reports whether a fault of m is armed for cmd (an EVALSHA: the
// library sends no other script call), disarming it.
func (f *ScriptFaults) take(m *map[string]int, cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 || !strings.EqualFold(cmd.Name(), "evalsha") {
		return false
	}
	sha, _ := args[1].(string)
	f.mu.Lock()
	defer f.mu.Unlock()
	if (*m)[sha] == 0 {
		return false
	}
	(*m)[sha]--
	return true
}

func (f *ScriptFaults) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *ScriptFaults) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if f.take(&f.before, cmd) {
			f.mu.Lock()
			f.held = append(f.held, cmd.Args())
			f.mu.Unlock()
			cmd.SetErr(ErrInjected)
			return ErrInjected
		}
		d := f.delayed(cmd)
		time.Sleep(d.before)
		err := next(ctx, cmd)
		time.Sleep(d.after)
		if err == nil && f.take(&f.after, cmd) {
			cmd.SetErr(ErrInjected)
			return ErrInjected
		}
		return err
	}
}

func (f *ScriptFaults) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
