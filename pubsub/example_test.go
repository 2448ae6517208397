package pubsub_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/pubsub"
)

// Example_wait replaces a SETNX spin-wait:
//
//	for {
//		ok, err := rdb.SetNX(ctx, "job:lock", "me", 30*time.Second).Result()
//		if err != nil || ok {
//			break
//		}
//		time.Sleep(100 * time.Millisecond)
//	}
//
// with Hub.Wait, woken as soon as the holder publishes its release, and still
// bounded by the poll interval if the message is lost.
func Example_wait() {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	hub, err := pubsub.NewHub(rdb, pubsub.WithPollInterval(time.Second))
	if err != nil {
		panic(err)
	}
	defer hub.Close(ctx)

	// Someone else holds the lock, and releases it: delete, then publish.
	rdb.Set(ctx, "job:lock", "other", 30*time.Second)
	released := make(chan struct{})
	go func() {
		defer close(released)
		rdb.Del(ctx, "job:lock")
		rdb.Publish(ctx, "job:lock:released", pubsub.One())
	}()

	err = hub.Wait(ctx, "job:lock:released", func(ctx context.Context) (bool, error) {
		return rdb.SetNX(ctx, "job:lock", "me", 30*time.Second).Result()
	})
	<-released
	fmt.Println(err, rdb.Get(ctx, "job:lock").Val())
	// Output: <nil> me
}
