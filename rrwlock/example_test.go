package rrwlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/rrwlock"
)

// Readers share the lock; a writer has it alone.
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

	reader, other, writer := rrwlock.New(c, "prices"), rrwlock.New(c, "prices"), rrwlock.New(c, "prices")
	if err := reader.RLock(ctx); err != nil {
		log.Fatal(err)
	}
	if err := other.RLock(ctx); err != nil {
		log.Fatal(err)
	}
	st, err := writer.State(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Mode, "by", len(st.Readers), "readers")
	ok, err := writer.TryLock(ctx)
	fmt.Println("writer got it:", ok, err)

	if err := reader.RUnlock(ctx); err != nil {
		log.Fatal(err)
	}
	if err := other.RUnlock(ctx); err != nil {
		log.Fatal(err)
	}
	if err := writer.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("written, token above 0:", writer.Token() > 0)
	if err := writer.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// read by 2 readers
	// writer got it: false <nil>
	// written, token above 0: true
}

// A writer may downgrade to a reader; a reader may not upgrade.
func ExampleRWMutex_RLock() {
	c, done := exampleClient()
	defer done()
	ctx := context.Background()

	mu := rrwlock.New(c, "catalog")
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	written := mu.Token()
	held, cancel := mu.Context(ctx) // the write hold's context names it
	defer cancel()
	if err := mu.RLock(held); err != nil { // the writer takes a read hold,
		log.Fatal(err)
	}
	if err := mu.Unlock(ctx); err != nil { // then lets other readers in
		log.Fatal(err)
	}
	fmt.Println("reading the version of the write's token:", mu.RToken() == written && written > 0)

	err := mu.Lock(ctx)
	fmt.Println("upgrade refused:", errors.Is(err, redcoord.ErrUpgrade))
	if err := mu.RUnlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// reading the version of the write's token: true
	// upgrade refused: true
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
