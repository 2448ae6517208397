package rratelimit_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rratelimit"
)

// Every process that calls a partner's API shares one limit of 10 calls
// a second, with bursts of up to 10: Wait takes its turn, in arrival
// order across processes; Allow never waits.
func Example() {
	srv := miniredis.NewMiniRedis() // any Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	c, err := redcoord.New(rdb) // one per process, shared by every primitive
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lim := rratelimit.New(c, "partner-api", rratelimit.PerSecond(10).WithBurst(10))
	if err := lim.Wait(wctx); err != nil { // sleeps until its slot; nothing is reserved if wctx ends first
		log.Fatal(err)
	}
	// ... call the partner ...

	r, err := lim.AllowN(ctx, 9) // never waits
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("allowed:", r.Allowed, "remaining:", r.Remaining)
	r, err = lim.Allow(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("allowed:", r.Allowed, "retry after at most:", r.RetryAfter <= 100*time.Millisecond)
	// Output:
	// allowed: true remaining: 0
	// allowed: false retry after at most: true
}
