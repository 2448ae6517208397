package scripts

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fair lock's scripts: lib.lua, queue_lib.lua, elect_lib.lua,
// fair_lib.lua, then the operation. The election runs them too, with its
// log as a seventh key (see NewFair).
var fairLock = loadFairSet()

// fairScripts lists this file's scripts, for SHA.
var fairScripts = fairLock.list()

// fairSet is the fair lock's scripts.
type fairSet struct {
	acquire, release, leave, heartbeat, force, queue *Script
}

// loadFair loads a script of the fair lock or of the election.
func loadFair(name string) *Script {
	return loadWith(name, "queue_lib.lua", "elect_lib.lua", "fair_lib.lua")
}

func loadFairSet() *fairSet {
	return &fairSet{acquire: loadFair("fair_acquire"), release: loadFair("fair_release"), leave: loadFair("fair_leave"),
		heartbeat: loadFair("fair_heartbeat"), force: loadFair("fair_force"), queue: loadFair("fair_queue")}
}

func (s *fairSet) list() []*Script {
	return []*Script{s.acquire, s.release, s.leave, s.heartbeat, s.force, s.queue}
}

// Fair names one FIFO lock: a lock hash, whose State and Renewal are those
// of any lock hash, and the queue of requests waiting for it (see
// fair_lib.lua). Its Acquire, Release, Leave and Force replace Lock's. A
// handle keeps one for each lock it names, so it holds only the lock hash
// and the calls prepared on every key, which are also where the keys are
// read from.
type Fair struct {
	*Lock           // the lock hash: the handle's own, prepared by the handle
	prep  *prepared // by NewFair: the fair lock's six keys, or an election's seven
}

// NewFair returns the fair lock on lock's hash and the queue's keys queue,
// alive and waiting, with its acquire and release prepared once, sharing
// the prepared arguments and ttl of lock (see Lock.Prepared), which it
// leaves as it is. log, when not empty, makes it an election's (see
// elect_lib.lua): the key of its log of leader changes.
func NewFair(lock *Lock, queue, alive, waiting, log string) Fair {
	k := append(make([]string, 0, 7), lock.Hash, lock.Fence, queue, alive, waiting, lock.Marks)
	if log != "" {
		k = append(k, log)
	}
	return Fair{Lock: lock, prep: lock.calls().on(k)}
}

// calls returns f's prepared calls.
func (f Fair) calls() *prepared { return f.prep }

// Log returns the key of an election's log of leader changes, or "" for a
// fair lock.
func (f Fair) Log() string {
	if len(f.prep.keys) < 7 {
		return ""
	}
	return f.prep.keys[6].(string)
}

// markerMs is MarkerTTL as a script argument, boxed once.
var markerMs any = MarkerTTL.Milliseconds()

// keys are every script's keys: the fair lock's six, or an election's
// seven (see elect_lib.lua).
func (f Fair) keys() []string {
	k := make([]string, len(f.prep.keys))
	for i, b := range f.prep.keys {
		k[i] = b.(string)
	}
	return k
}

// args prepends the arguments every fair script takes: the owner acting
// after those of every primitive's script (see fair_lib.lua).
func (f Fair) args(more ...any) []any {
	return f.ownedArgs(more...)
}

// Attempt is the reply of a fair acquire attempt.
type Attempt struct {
	Acquired
	Age time.Duration // when OK: how long ago the hold was taken (0: just now)
	Now int64         // when not OK: the server's clock when the script ran, ms
}

// Acquire takes the lock, re-enters the hold named by held (TokenArg), or
// finds that req holds it already (a retry, or a grant). When it does not,
// and queue is true, req joins the queue (once) and its heartbeat deadline
// is set to heartbeat from now.
func (f Fair) Acquire(ctx context.Context, rdb redis.Scripter, req string, held any, lease LeaseArg, queue bool,
	heartbeat time.Duration) (Attempt, error) {
	c := f.calls()
	v, err := c.run(ctx, rdb, fairLock.acquire, req, lease.ms, lease.meta, flag(queue), c.ms(heartbeat), held)
	return decode(v, err, fairAttempt)
}

// fairAttempt decodes a fair acquire's reply: {1, token, count, age} or
// {0, wait ms, server ms}.
func fairAttempt(v any) (Attempt, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 3 {
		return Attempt{}, errUnexpected(v)
	}
	var r [4]int64
	for i := range min(len(arr), 4) {
		if r[i], ok = arr[i].(int64); !ok {
			return Attempt{}, errUnexpected(v)
		}
	}
	switch {
	case r[0] == 0:
		return Attempt{Acquired: Acquired{Wait: time.Duration(r[1]) * time.Millisecond}, Now: r[2]}, nil
	case len(arr) < 4:
		return Attempt{}, errUnexpected(v)
	}
	return Attempt{Acquired: Acquired{OK: true, Token: uint64(r[1]), Count: r[2]},
		Age: time.Duration(r[3]) * time.Millisecond}, nil
}

// ParseGrant decodes the payload of a grant message, "<token> <server ms>"
// (see fair_hand_on in fair_lib.lua): the grantee's token, and the server's clock
// when the grant was made. ok is false for anything else.
func ParseGrant(payload string) (token uint64, at int64, ok bool) {
	t, a, found := strings.Cut(payload, " ")
	if !found {
		return 0, 0, false
	}
	token, err1 := strconv.ParseUint(t, 10, 64)
	at, err2 := strconv.ParseInt(a, 10, 64)
	if !found || err1 != nil || err2 != nil || token == 0 {
		return 0, 0, false
	}
	return token, at, true
}

// Release drops one hold (every hold if all) of the owner's hold whose
// token is named (TokenArg) and returns the remaining count; -1: not held
// (a hold of the owner with another token was granted to a waiting request
// after the named one ended, and is left alone). At zero the lock goes to
// the first live waiter. A retried final release is recognised by the
// Client's request markers, as Lock.Release's.
func (f Fair) Release(ctx context.Context, rdb redis.Scripter, req string, all bool, named any) (int64, error) {
	v, err := f.calls().run(ctx, rdb, fairLock.release, req, flag(all), named)
	return decode(v, err, integer)
}

// Leave undoes what the acquire request req did: its queue entry, or the
// hold it took or was granted, and makes Redis refuse a copy of req that
// arrives later. It reports whether there was anything to undo.
func (f Fair) Leave(ctx context.Context, rdb redis.Scripter, req string) (bool, error) {
	v, err := fairLock.leave.Run(ctx, rdb, f.keys(), f.args(req)...)
	if err != nil {
		return false, err
	}
	n, err := integer(v)
	return n == 1, err
}

// Force deletes the lock whoever holds it, as Lock.Force does, and hands
// it to the first live waiter.
func (f Fair) Force(ctx context.Context, rdb redis.Scripter, notice, upto, req string) (Forced, error) {
	return forced(fairLock.force.Run(ctx, rdb, f.keys(), f.args(notice, upto, req)...))
}

// Heartbeat returns the watchdog's renewal of req's place in the queue: the
// script, its keys and its arguments. The script replies 1 (still waiting,
// or granted) or 0 (gone from the queue).
func (f Fair) Heartbeat(req string, heartbeat time.Duration) (*redis.Script, []string, []any) {
	return fairLock.heartbeat.Script, f.keys(), f.args(req, heartbeat.Milliseconds())
}

// Queue is the state of a fair lock's queue.
type Queue struct {
	Len      int64 // live waiters
	Position int64 // 1-based place of the owner's first live request; 0: not waiting
}

// QueueState reads the queue, as the owner sees it.
func (f Fair) QueueState(ctx context.Context, rdb redis.Scripter) (Queue, error) {
	v, err := fairLock.queue.Run(ctx, rdb, f.keys(), f.args()...)
	if err != nil {
		return Queue{}, err
	}
	r, err := ints(v, 2)
	if err != nil {
		return Queue{}, err
	}
	return Queue{Len: r[0], Position: r[1]}, nil
}
