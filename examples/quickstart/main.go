// Command quickstart takes a lock in a local Redis, works under it and
// releases it.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rlock"
)

func main() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	c, err := redcoord.New(rdb) // one per process, shared by every lock
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	// A handle is an owner: goroutines sharing it exclude each other.
	mu := rlock.New(c, "orders:42")
	wait, cancel := context.WithTimeout(ctx, 10*time.Second) // Lock waits, through outages too, until its ctx ends
	defer cancel()
	if err := mu.Lock(wait); err != nil {
		log.Fatal(err)
	}
	work, stop := mu.Context(ctx) // cancelled if the hold is lost, and at Unlock
	fmt.Println("holding orders:42, fencing token", mu.Token())
	_ = work // do the guarded work under work, and pass mu.Token() to the store it writes
	stop()

	if err := mu.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("released")
}
