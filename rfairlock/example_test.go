package rfairlock_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rfairlock"
)

// Lock a name across processes; waiters are served in the order they asked.
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

	mu := rfairlock.New(c, "payments")
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

// Waiters queue in the order they ask and are handed the lock in turn.
func ExampleMutex_Position() {
	c, done := exampleClient()
	defer done()
	ctx := context.Background()

	holder := rfairlock.New(c, "report")
	if err := holder.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	served := make(chan string)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, who := range []string{"alice", "bob"} {
		m := rfairlock.New(c, "report")
		wg.Go(func() {
			if err := m.Lock(ctx); err != nil {
				log.Fatal(err)
			}
			served <- who
			_ = m.Unlock(ctx)
		})
		for p := 0; p == 0; p, _ = m.Position(ctx) { // wait until it is queued
			time.Sleep(time.Millisecond)
		}
		p, _ := m.Position(ctx)
		fmt.Println(who, "is waiting at position", p)
	}
	n, _ := holder.QueueLength(ctx)
	fmt.Println("queue length", n)
	_ = holder.Unlock(ctx)
	fmt.Println(<-served, "got it")
	fmt.Println(<-served, "got it")
	// Output:
	// alice is waiting at position 1
	// bob is waiting at position 2
	// queue length 2
	// alice got it
	// bob got it
}

// TryLock never queues, and never takes the lock from someone queued for it.
func ExampleMutex_TryLock() {
	c, done := exampleClient()
	defer done()
	ctx := context.Background()

	a, b := rfairlock.New(c, "batch"), rfairlock.New(c, "batch")
	ok, _ := a.TryLock(ctx)
	fmt.Println("a:", ok)
	ok, _ = b.TryLock(ctx)
	fmt.Println("b:", ok)
	n, _ := b.QueueLength(ctx)
	fmt.Println("queued:", n)
	_ = a.Unlock(ctx)
	// Output:
	// a: true
	// b: false
	// queued: 0
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
