package scripts

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// lockMulti takes several lock hashes of one slot, all or none.
var lockMulti = load("lock_multi")

// MultiPart is one name of a multi-lock try: its lock hash (keys and
// owner), the request id and the hold the owner's handle has (TokenArg).
type MultiPart struct {
	Lock Lock
	Req  string
	Held any
}

// MultiTry is the reply of a multi-lock try.
type MultiTry struct {
	OK     bool
	Tokens []uint64 // when OK, per part: a fresh hold's token; 0: held already, kept
	Busy   int      // when not OK: the index of the first part held by another owner
	Wait   time.Duration
}

// AcquireMulti takes the lock hashes of parts, all or none, in one script:
// each part's is taken afresh for its owner, or kept if the owner's handle
// holds it already, or found taken by this very request (a retry). The
// parts must be in one Cluster slot; kind and lease are every part's.
func AcquireMulti(ctx context.Context, rdb redis.Scripter, kind string, parts []MultiPart,
	lease LeaseArg) (MultiTry, error) {
	keys := make([]string, 0, 3*len(parts))
	args := make([]any, 0, 7+3*len(parts))
	var first Lock // its channel is the head's (see lib.lua); nothing is published
	if len(parts) > 0 {
		first = parts[0].Lock
	}
	args = append(args, kind, first.Publish, first.Channel, markerMs, lease.ms, lease.meta, len(parts))
	for _, p := range parts {
		keys = append(keys, p.Lock.Hash, p.Lock.Fence, p.Lock.Marks)
		args = append(args, p.Lock.Owner, p.Req, p.Held)
	}
	v, err := lockMulti.Run(ctx, rdb, keys, args...)
	return decode(v, err, func(v any) (MultiTry, error) {
		r, err := ints(v, 1)
		switch {
		case err != nil:
			return MultiTry{}, err
		case r[0] == 0 && len(r) == 3:
			return MultiTry{Busy: int(r[1]) - 1, Wait: time.Duration(r[2]) * time.Millisecond}, nil
		case r[0] == 1 && len(r) == 1+len(parts):
			t := MultiTry{OK: true, Tokens: make([]uint64, len(parts))}
			for i := range parts {
				t.Tokens[i] = uint64(r[i+1])
			}
			return t, nil
		}
		return MultiTry{}, errUnexpected(v)
	})
}
