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

// Replace a spin-wait on your own condition with the Client's Hub: check,
// then sleep until a message on the channel (or the poll interval), re-check.
func ExampleClient_Hub() {
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	c, err := redcoord.New(rdb, redcoord.WithLeaseTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	go func() { // another process finishes a job and says so
		rdb.Set(ctx, "job:7:state", "done", 0)
		rdb.Publish(ctx, "job:7:events", "*")
	}()
	hub, err := c.Hub()
	if err != nil {
		log.Fatal(err)
	}
	err = hub.Wait(ctx, "job:7:events", func(ctx context.Context) (bool, error) {
		state, err := rdb.Get(ctx, "job:7:state").Result()
		if err == redis.Nil {
			return false, nil
		}
		return state == "done", err
	})
	fmt.Println("job done:", err == nil)
	// Output: job done: true
}

// On Redis Cluster, pass a *redis.ClusterClient. (miniredis stands in for a
// one-node cluster here; it has no sharded pub/sub, which the Client
// detects once.)
func ExampleNew_cluster() {
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	addrs := []string{srv.Addr()}
	ctx := context.Background()

	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer rdb.Close()
	c, err := redcoord.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	mu := rlock.New(c, "orders:42") // keys rc:{orders:42}:*, all in one slot
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked, token above 0:", mu.Token() > 0)
	if err := mu.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: locked, token above 0: true
}

// With WithWaitReplicas an acquire counts only once the replicas have it.
// This server has no replica to acknowledge anything: Lock fails with
// ErrNotReplicated, and the lock is left free.
func ExampleWithWaitReplicas() {
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	c, err := redcoord.New(rdb, redcoord.WithWaitReplicas(1, 100*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)
	mu := rlock.New(c, "orders:42")
	err = mu.Lock(ctx)
	fmt.Println("not replicated:", errors.Is(err, redcoord.ErrNotReplicated))
	locked, err := mu.IsLocked(ctx)
	fmt.Println("locked:", locked, err)
	// Output:
	// not replicated: true
	// locked: false <nil>
}

// An observer hears every acquire and release: hand the events to your
// metrics.
func ExampleWithObserver() {
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	events := make(chan redcoord.Event, 100)
	c, err := redcoord.New(rdb, redcoord.WithObserver(func(e redcoord.Event) {
		select { // quick, and never blocks the Client
		case events <- e:
		default:
		}
	}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	mu := rlock.New(c, "report")
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	if err := mu.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		select {
		case e := <-events:
			fmt.Println(e.Kind, e.Primitive, e.Name)
		case <-time.After(5 * time.Second):
			fmt.Println("no event")
		}
	}
	// Output:
	// acquired rlock report
	// released rlock report
}
