package pubsub_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/pubsub"
)

// Replace a SETNX spin-wait with Hub.Wait: the check runs again as soon as
// the holder publishes its release, and at the latest after the poll
// interval if the message is lost.
func ExampleHub_Wait() {
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
	rdb.Set(ctx, "job:lock", "other", 30*time.Second) // someone else holds it
	released := make(chan error, 1)

	go func() { // the holder releases: delete, then publish
		rdb.Del(ctx, "job:lock")
		released <- pubsub.Publish(ctx, rdb, "job:lock:released", "*")
	}()
	hub, err := c.Hub()
	if err != nil {
		log.Fatal(err)
	}
	err = hub.Wait(ctx, "job:lock:released", func(ctx context.Context) (bool, error) {
		return rdb.SetNX(ctx, "job:lock", "me", 30*time.Second).Result()
	})
	fmt.Println(err, rdb.Get(ctx, "job:lock").Val())

	fmt.Println(<-released)
	// Output:
	// <nil> me
	// <nil>
}

// Publish picks the command that reaches the Hubs of rdb's clients: on a
// *redis.ClusterClient, SPUBLISH, and PUBLISH where the cluster does not
// know it (here a miniredis, which has no sharded pub/sub; the Hub finds
// that out too, and subscribes with SUBSCRIBE).
func ExamplePublish() {
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	defer rdb.Close()
	ctx := context.Background()
	c, err := redcoord.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)
	hub, err := c.Hub()
	if err != nil {
		log.Fatal(err)
	}
	published := make(chan error, 1)

	go func() { // a worker finishes job 7 and says so
		rdb.Set(ctx, "{job:7}:state", "done", 0)
		published <- pubsub.Publish(ctx, rdb, "{job:7}:events", "*")
	}()
	err = hub.Wait(ctx, "{job:7}:events", func(ctx context.Context) (bool, error) {
		state, err := rdb.Get(ctx, "{job:7}:state").Result()
		if err == redis.Nil {
			return false, nil
		}
		return state == "done", err
	})
	fmt.Println("job done:", err == nil, "published:", <-published)
	// Output: job done: true published: <nil>
}

// A Lua script that wakes waiters takes the command as an argument.
func ExamplePublishCommand() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"localhost:7000"}})
	defer cluster.Close()

	fmt.Println(pubsub.PublishCommand(rdb))
	fmt.Println(pubsub.PublishCommand(cluster))
	// Output:
	// PUBLISH
	// SPUBLISH
}

// Stats counts the Wait in progress while its check runs; Err is nil while
// the server accepts SUBSCRIBE.
func ExampleHub_Stats() {
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
	hub, err := c.Hub()
	if err != nil {
		log.Fatal(err)
	}

	err = hub.Wait(ctx, "ready", func(context.Context) (bool, error) {
		st := hub.Stats()
		fmt.Println("channels:", st.Channels, "waiters:", st.Waiters, "refused:", st.Refused, st.Err)
		return true, nil
	})
	fmt.Println(err, hub.Stats().Waiters)
	// Output:
	// channels: 1 waiters: 1 refused: false <nil>
	// <nil> 0
}
