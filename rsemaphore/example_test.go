package rsemaphore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rsemaphore"
)

// A pool of permits shared by every process: at most 8 jobs at once.
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

	pool := rsemaphore.New(c, "render-jobs")
	if _, err := pool.TrySetPermits(ctx, 8); err != nil { // whoever comes first
		log.Fatal(err)
	}
	if err := pool.Acquire(ctx, 3); err != nil { // all 3 at once, or none
		log.Fatal(err)
	}
	n, err := pool.Available(ctx)
	fmt.Println("available:", n, err)
	if err := pool.Release(ctx, 3); err != nil {
		log.Fatal(err)
	}
	// Output:
	// available: 5 <nil>
}

// A fair semaphore serves its waiters in order: a request for 3 permits is
// not overtaken by later requests for 1.
func ExampleWithFair() {
	c, done := exampleClient()
	defer done()
	ctx := context.Background()

	pool := rsemaphore.New(c, "uploads", rsemaphore.WithFair())
	if err := pool.SetPermits(ctx, 4); err != nil {
		log.Fatal(err)
	}
	if err := pool.Acquire(ctx, 2); err != nil {
		log.Fatal(err)
	}
	big := make(chan error, 1)
	go func() { big <- pool.Acquire(ctx, 3) }() // 2 are free: it queues
	// Wait until it is queued (at most 5s).
	for i := 0; i < 5000; i++ {
		if st, _ := pool.State(ctx); st.Waiting > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ok, err := pool.TryAcquire(ctx, 1)
	fmt.Println("a later request for 1 overtakes:", ok, err)

	if err := pool.Release(ctx, 2); err != nil { // granted to the queue's head
		log.Fatal(err)
	}
	fmt.Println("3 permits acquired:", <-big)
	if err := pool.Release(ctx, 3); err != nil {
		log.Fatal(err)
	}
	// Output:
	// a later request for 1 overtakes: false <nil>
	// 3 permits acquired: <nil>
}

// Permits with leases come back when their holder dies: here the lease is
// fixed, so the permit returns when it ends, with no release.
func ExampleExpirableSemaphore() {
	c, done := exampleClient()
	defer done()
	ctx := context.Background()

	seats := rsemaphore.NewExpirable(c, "licences")
	if err := seats.SetPermits(ctx, 1); err != nil {
		log.Fatal(err)
	}
	p, err := seats.Acquire(ctx, rsemaphore.AcquireOptions{Lease: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("permit token above 0:", p.Token > 0)

	q, err := seats.Acquire(ctx, rsemaphore.AcquireOptions{}) // waits out p's lease; the watchdog keeps q
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("next permit token above it:", q.Token > p.Token)
	err = seats.Release(ctx, p)
	fmt.Println("releasing the expired one:", errors.Is(err, redcoord.ErrLeaseLost))
	if err := seats.Release(ctx, q); err != nil {
		log.Fatal(err)
	}
	// Output:
	// permit token above 0: true
	// next permit token above it: true
	// releasing the expired one: true
}

// exampleClient returns a Client on a fresh miniredis, and what closes both.
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
