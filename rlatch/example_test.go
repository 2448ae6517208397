package rlatch_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rlatch"
)

// Three workers, in any processes, count a latch down as they finish; a
// waiter anywhere returns once all three have.
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

	done := rlatch.New(c, "nightly-import")
	if _, err := done.TrySetCount(ctx, 3); err != nil { // by the coordinator, once
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			// ... a worker's part of the import ...
			if err := rlatch.New(c, "nightly-import").CountDown(ctx); err != nil {
				log.Fatal(err)
			}
		})
	}
	if err := done.Wait(ctx); err != nil { // woken by the third CountDown
		log.Fatal(err)
	}
	n, err := done.Count(ctx)
	fmt.Println("left:", n, err)
	wg.Wait()
	// Output: left: 0 <nil>
}
