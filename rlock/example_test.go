package rlock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rlock"
)

// Lock a name across processes, with a fencing token for the store.
func Example() {
	srv := miniredis.NewMiniRedis() // any Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	c, err := redcoord.New(rdb) // one per process, shared by every lock
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	mu := rlock.New(c, "orders:42")
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked, token above 0:", mu.Token() > 0)
	if err := mu.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("unlocked")
	// Output:
	// locked, token above 0: true
	// unlocked
}

// TryLock never waits; a handle is an owner, so a second handle is refused.
func ExampleMutex_TryLock() {
	c, done := exampleClient()
	defer done()
	ctx := context.Background()

	a, b := rlock.New(c, "report"), rlock.New(c, "report")
	ok, _ := a.TryLock(ctx)
	fmt.Println("a:", ok)
	ok, _ = b.TryLock(ctx)
	fmt.Println("b:", ok)
	_ = a.Unlock(ctx)
	// Output:
	// a: true
	// b: false
}

// Lost reports a hold that vanished (lease expired while the process was
// paused, or ForceUnlock): stop work that relied on it.
func ExampleMutex_Lost() {
	c, done := exampleClient()
	defer done()
	ctx := context.Background()

	mu := rlock.New(c, "job")
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	lost := mu.Lost()
	_, _ = rlock.New(c, "job").ForceUnlock(ctx) // an operator steps in
	err := mu.Unlock(ctx)
	fmt.Println(err)
	select {
	case <-lost:
		fmt.Println("lost")
	default:
	}
	// Output:
	// redcoord: lease lost: rlock "job": the hold expired or was deleted before release
	// lost
}

// exampleClient returns a Client on a fresh in-memory Redis, and a function
// that closes both.
func exampleClient() (*redcoord.Client, func()) {
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	c, err := redcoord.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	return c, func() {
		_ = c.Close(context.Background())
		_ = rdb.Close()
		srv.Close()
	}
}

// A transfer between two accounts holds both locks or neither; two
// transfers over the same accounts, named in either order, never wait for
// each other in a circle.
func ExampleMultiMutex() {
	c, done := exampleClient()
	defer done()
	ctx := context.Background()

	both := rlock.NewMulti(c, []string{"account:7", "account:3"})
	if err := both.Lock(ctx); err != nil { // all or none; one round trip when both are free
		log.Fatal(err)
	}
	tokens := both.Tokens() // a fencing token per name, for the store
	fmt.Println(len(tokens), tokens["account:3"] > 0, tokens["account:7"] > 0)
	// ... move the money ...
	if err := both.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: 2 true true
}

// One lock over three independent Redis servers, held while a majority of
// them hold it.
func ExampleRedLock() {
	var clients []*redcoord.Client
	for range 3 { // one Client per server: redis.NewClient(&redis.Options{Addr: "redis-a:6379"}), ...
		c, done := exampleClient()
		defer done()
		clients = append(clients, c)
	}
	ctx := context.Background()

	rl := rlock.NewRedLock(clients, "nightly-report")
	if err := rl.Lock(ctx); err != nil { // a majority granted it, with validity left
		log.Fatal(err)
	}
	fmt.Println("valid for more than 20s:", rl.Validity() > 20*time.Second) // renewed by the watchdogs
	if err := rl.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: valid for more than 20s: true
}

// Context ends with the hold: run the guarded work under it, and it stops
// when the lock is lost (or released).
func ExampleMutex_Context() {
	c, done := exampleClient()
	defer done()
	ctx := context.Background()

	mu := rlock.New(c, "invoices")
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	work, stop := mu.Context(ctx) // cancelled when the hold is lost or released
	defer stop()
	// ... do the guarded work with work; check work.Err() between steps ...
	_ = mu.Unlock(ctx)
	fmt.Println(context.Cause(work))
	// Output: redcoord: not held: rlock "invoices": released
}

// A Lock re-enters the hold when its ctx comes from the hold's Context:
// the context says which caller owns the hold, as a thread does in
// Redisson. Any other Lock on the handle waits for the hold to end.
func ExampleMutex_Lock_reentry() {
	c, done := exampleClient()
	defer done()
	ctx := context.Background()

	mu := rlock.New(c, "ledger")
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	held, cancel := mu.Context(ctx)
	defer cancel()
	if err := mu.Lock(held); err != nil { // a re-entry: the hold count is 2
		log.Fatal(err)
	}
	n, _ := mu.HoldCount(ctx)
	fmt.Println("hold count:", n)
	ok, _ := mu.TryLock(ctx) // not a re-entry: the handle is held
	fmt.Println("another caller's TryLock:", ok)
	_ = mu.Unlock(ctx)
	_ = mu.Unlock(ctx)
	// Output:
	// hold count: 2
	// another caller's TryLock: false
}

// Extend turns a hold into one with a fixed lease from now: the watchdog
// stops renewing it.
func ExampleMutex_Extend() {
	c, done := exampleClient()
	defer done()
	ctx := context.Background()

	mu := rlock.New(c, "export")
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	if err := mu.Extend(ctx, 2*time.Minute); err != nil { // a fixed lease from now; the watchdog stops
		log.Fatal(err)
	}
	h, _, _ := mu.Holder(ctx)
	fmt.Println(h.Remaining > time.Minute)
	_ = mu.Unlock(ctx)
	// Output: true
}
