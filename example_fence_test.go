package redcoord_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rlock"
)

// fencedSet is a store that checks fencing tokens: it writes to the hash
// KEYS[1] the value ARGV[2] with the writer's token ARGV[1], unless the hash
// holds a higher token already. Tokens stay below 2^53, exact in Lua.
var fencedSet = redis.NewScript(`
local last = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
if tonumber(ARGV[1]) < last then
  return 0
end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return 1
`)

// save writes value to key with the token of the hold that guards it.
func save(ctx context.Context, rdb redis.Scripter, key, value string, token uint64) error {
	ok, err := fencedSet.Run(ctx, rdb, []string{key}, token, value).Bool()
	if err == nil && !ok {
		err = errors.New("refused: a later holder has written")
	}
	return err
}

// A holder paused past its lease wakes believing it still holds the lock;
// the store refuses its write, which carries a lower token than the
// successor's.
func Example_fencedStore() {
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	c, err := redcoord.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	a := rlock.New(c, "orders:42")
	if err := a.LockWithLease(ctx, time.Second); err != nil {
		log.Fatal(err)
	}
	srv.FastForward(2 * time.Second) // a pauses; its lease runs out in Redis
	b := rlock.New(c, "orders:42")
	if err := b.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("b:", save(ctx, rdb, "order:42:total", "from b", b.Token()))
	fmt.Println("a:", save(ctx, rdb, "order:42:total", "from a", a.Token())) // a wakes up
	// Output:
	// b: <nil>
	// a: refused: a later holder has written
}
