package scripts

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The read-write lock's scripts: lib.lua, then rw_lib.lua, then the operation.
var (
	rwRead    = loadWith("rw_read", "rw_lib.lua")
	rwWrite   = loadWith("rw_write", "rw_lib.lua")
	rwRUnlock = loadWith("rw_runlock", "rw_lib.lua")
	rwUnlock  = loadWith("rw_unlock", "rw_lib.lua")
	rwLeave   = loadWith("rw_leave", "rw_lib.lua")
	rwRenew   = loadWith("rw_renew", "rw_lib.lua")
	rwRExtend = loadWith("rw_rextend", "rw_lib.lua")
	rwForce   = loadWith("rw_force", "rw_lib.lua")
	rwState   = loadWith("rw_state", "rw_lib.lua")
)

// rwScripts lists this file's scripts, for SHA.
var rwScripts = []*Script{rwRead, rwWrite, rwRUnlock, rwUnlock, rwLeave, rwRenew, rwRExtend, rwForce, rwState}

// RW names one read-write lock (see rw_lib.lua) and the owner acting on it.
// Its write hold is a lock hash: Lock's Renewal renews it.
type RW struct {
	Lock                     Lock   // the write hold's hash, fence, marker, owner, kind, readers' channel
	Readers, Leases, Writers string // keys
	WriterWaiters            string // the key of the writers' wake registry
	WriterChannel            string // the name's writers' channel; a Client's is it followed by ":<client id>"
	Value                    string // the handle's value (WithValue), stored with its read holds; "" none

	prep  *prepared // by Prepared; nil: prepared on each call
	value any       // Value, boxed by Prepared
}

// Prepared returns rw with its acquires and releases prepared once, on
// rw's keys, with the prepared arguments and ttl of its Lock (see
// Lock.Prepared), which it leaves as it is, followed by the writers'
// channel; a read acquire sends rw's Value, boxed once.
func (rw RW) Prepared() RW {
	l := rw.Lock.calls()
	rw.prep = prepare(rw.keys(), append(l.fixed(), rw.WriterChannel), l.ttl, l.keys)
	rw.value = rw.Value
	return rw
}

// calls returns rw's prepared calls, or prepares them.
func (rw RW) calls() *prepared {
	if rw.prep == nil {
		rw = rw.Prepared()
	}
	return rw.prep
}

// valueArg returns Value as a script argument: boxed once if rw is
// prepared.
func (rw RW) valueArg() any {
	if rw.prep != nil {
		return rw.value
	}
	return rw.Value
}

// args prepends the arguments every rw script takes (see rw_lib.lua): the
// owner acting after those of every primitive's script, then the writers'
// channel.
func (rw RW) args(more ...any) []any {
	l := rw.Lock
	return append([]any{constArg(l.Kind), constArg(l.Publish), l.Channel, markerMs, l.Owner, rw.WriterChannel}, more...)
}

// writerOnly is rw_write's ARGV[10] for a writer that waits without
// registering to be woken, boxed once.
var writerOnly any = "w"

// upgradeReply is rw_write's reply to an owner that holds only read holds.
const upgradeReply = -1

func (rw RW) keys() []string {
	return []string{rw.Lock.Hash, rw.Lock.Fence, rw.Readers, rw.Leases, rw.Writers, rw.Lock.Marks, rw.WriterWaiters}
}

func (rw RW) run(ctx context.Context, rdb redis.Scripter, s *Script, args ...any) (any, error) {
	return rw.runKeys(ctx, rdb, rw.keys(), s, args...)
}

func (rw RW) runKeys(ctx context.Context, rdb redis.Scripter, keys []string, s *Script, args ...any) (any, error) {
	return s.Run(ctx, rdb, keys, rw.args(args...)...)
}

// Read takes a read hold, or re-enters it when held (the handle has one),
// with rw's Value. Its token is the last write's.
func (rw RW) Read(ctx context.Context, rdb redis.Scripter, req string, held bool,
	lease time.Duration) (Acquired, error) {
	c := rw.calls()
	v, err := c.run(ctx, rdb, rwRead, req, c.ms(lease), flag(held), rw.valueArg())
	return decode(v, err, acquired)
}

// Write takes the write hold or re-enters the one whose token is held (0:
// none); a busy lock registers the owner as a waiting writer with a
// heartbeat of hb when wait is true. reg says what the try does with the
// writers' wake registry, where req's Client is registered (see Registry;
// NoRegistry: a Client whose waits poll). Upgrade is true when the owner
// holds read holds only.
func (rw RW) Write(ctx context.Context, rdb redis.Scripter, req string, held any, lease LeaseArg,
	wait bool, reg Registry, hb time.Duration) (a Acquired, upgrade bool, err error) {
	w := flagFalse
	switch {
	case wait && reg != NoRegistry:
		w = reg.arg
	case wait:
		w = writerOnly
	}
	c := rw.calls()
	v, err := c.run(ctx, rdb, rwWrite, req, lease.ms, lease.meta, w, c.ms(hb), held)
	if arr, ok := v.([]any); ok && len(arr) == 1 && arr[0] == int64(upgradeReply) {
		return Acquired{}, true, nil // it wrote nothing for a shortfall to matter
	}
	a, err = decode(v, err, acquired)
	return a, false, err
}

// ReadName is the argument that names the read hold taken by request req
// (see rw_lib.lua): the requests that change the hold send it, so that a
// copy sent for an earlier hold of the owner changes nothing in a later
// one. A read hold's token, the last write's, may be an earlier hold's too.
func ReadName(req string) any { return req }

// RUnlock drops one read hold (every read hold of the owner if all) of the
// owner's read hold named (ReadName) and returns the remaining count; -1:
// not held.
func (rw RW) RUnlock(ctx context.Context, rdb redis.Scripter, req string, all bool, named any) (int64, error) {
	v, err := rw.calls().run(ctx, rdb, rwRUnlock, req, flag(all), named)
	return decode(v, err, integer)
}

// Unlock drops one write hold (every write hold of the owner if all) of
// the owner's write hold whose token is named (TokenArg), as Lock.Release,
// and returns the remaining count; -1: not held. wake is a waiting
// writer's wake for the caller's own Client, as Lock.Release's.
func (rw RW) Unlock(ctx context.Context, rdb redis.Scripter, req string, all bool,
	named any) (n int64, wake string, err error) {
	v, err := rw.calls().run(ctx, rdb, rwUnlock, req, flag(all), named)
	h, err := decode(v, err, handed)
	return h.N, h.Wake, err
}

// Leave undoes the acquire request req if it was applied, and, for a writer,
// stops waiting; Redis then refuses a copy of req that arrives later. A
// writer's Client leaves the wake registry unless keep (other local
// writers wait, or it never registered). wake is as for Unlock: a writer's
// leave may free the lock for a writer of its own Client.
func (rw RW) Leave(ctx context.Context, rdb redis.Scripter, req string, write,
	keep bool) (undone bool, wake string, err error) {
	v, err := rw.run(ctx, rdb, rwLeave, req, mode(write), flag(keep))
	if err != nil {
		return false, "", err
	}
	h, err := handed(v)
	return h.N == 1, h.Wake, err
}

// Force ends every hold, whoever holds it, as Lock.Force does, and tells
// the holders' Clients on their notice channels.
func (rw RW) Force(ctx context.Context, rdb redis.Scripter, notice, upto, req string) (Forced, error) {
	return forced(rw.run(ctx, rdb, rwForce, notice, upto, req))
}

// Renewal returns the watchdog's renewal of the owner's read hold (write
// false), to be sent followed by the hold's name (ReadName), or of its
// heartbeat as a waiting writer (write true). The script replies 1
// (renewed) or 0 (gone, or not the read hold named).
func (rw RW) Renewal(write bool, ttl time.Duration) (*redis.Script, []string, []any) {
	return rwRenew.Script, rw.keys(), rw.args(ttl.Milliseconds(), mode(write))
}

// Beat returns the watchdog's renewal of Client client's registration in
// the writers' wake registry, as Lock.Beat does for a lock's.
func (rw RW) Beat(client string, ttl time.Duration) (*redis.Script, []string, []any) {
	return lockBeat.Script, []string{rw.WriterWaiters}, rw.Lock.args(client, ttl.Milliseconds())
}

// RExtend gives the owner's read hold named (ReadName) a fixed lease of
// length from now, which a renewal sent before it leaves alone, and so
// does a copy of an RExtend of the hold numbered up to req (a request id
// the handle made in its turn); false: the owner holds no read hold of
// that name. A WAIT shortfall comes with the reply: the lease stands.
func (rw RW) RExtend(ctx context.Context, rdb redis.Scripter, req string, length time.Duration,
	named any) (bool, error) {
	v, err := rw.run(ctx, rdb, rwRExtend, length.Milliseconds(), named, req)
	return decode(v, err, isOne)
}

func mode(write bool) string {
	if write {
		return "w"
	}
	return "r"
}

// RWState is who holds a read-write lock and who waits to write.
type RWState struct {
	Writer         State // Held false when no write hold
	LastToken      uint64
	WaitingWriters int64
	Readers        []Reader
}

// Reader is one owner's read holds.
type Reader struct {
	Owner     string
	Count     int64
	Remaining time.Duration
	Value     string // the handle's (WithValue), "" none
}

// State reads the lock's holders. It writes nothing.
func (rw RW) State(ctx context.Context, rdb redis.Scripter) (RWState, error) {
	v, err := rw.run(ctx, rdb, rwState)
	if err != nil {
		return RWState{}, err
	}
	arr, ok := v.([]any)
	if !ok || len(arr) < 8 || (len(arr)-8)%4 != 0 {
		return RWState{}, errUnexpected(v)
	}
	writer, ok1 := arr[0].(string)
	meta, ok2 := arr[4].(string)
	nums, err := ints([]any{arr[1], arr[2], arr[3], arr[5], arr[6], arr[7]}, 6)
	if !ok1 || !ok2 || err != nil {
		return RWState{}, errUnexpected(v)
	}
	st := RWState{LastToken: uint64(nums[4]), WaitingWriters: nums[5]}
	if writer != "" {
		st.Writer = State{Held: true, Owner: writer, Count: nums[0], Token: uint64(nums[1]),
			Remaining: time.Duration(nums[2]) * time.Millisecond, Meta: []byte(meta),
			AcquiredAt: time.UnixMilli(nums[3])}
	}
	for i := 8; i < len(arr); i += 4 {
		owner, ok1 := arr[i].(string)
		value, ok2 := arr[i+3].(string)
		n, err := ints([]any{arr[i+1], arr[i+2]}, 2)
		if !ok1 || !ok2 || err != nil {
			return RWState{}, errUnexpected(v)
		}
		st.Readers = append(st.Readers,
			Reader{Owner: owner, Count: n[0], Remaining: time.Duration(n[1]) * time.Millisecond, Value: value})
	}
	return st, nil
}
