package relection_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/relection"
)

// Two workers campaign for one name; the first leads until it resigns,
// then the second leads at once, in a later term. An observer sees both.
func Example() {
	srv := miniredis.NewMiniRedis() // any Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := redcoord.New(rdb) // one per process, shared by every primitive
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)

	e := relection.New(c, "scheduler")
	if err := e.Campaign(ctx, "worker-1"); err != nil { // blocks until this handle leads
		log.Fatal(err)
	}
	work, stop := e.Context(ctx) // cancelled if the lead is lost, or at Resign
	defer stop()
	_ = work // run the leader's work under it; pass e.Token() to what it writes

	leaders := relection.New(c, "scheduler").Observe(ctx) // the leader, then every change, in order

	next := relection.New(c, "scheduler")
	led := make(chan error, 1)
	go func() { led <- next.Campaign(ctx, "worker-2") }() // waits its turn

	fmt.Println((<-leaders).Value)
	if err := e.Resign(ctx); err != nil { // worker-2 leads at once
		log.Fatal(err)
	}
	if err := <-led; err != nil {
		log.Fatal(err)
	}
	l := <-leaders
	for l.Term == 0 { // nobody leads: worker-2 had not queued yet when worker-1 resigned
		l = <-leaders
	}
	fmt.Println(l.Value, l.Term > 0, context.Cause(work))
	// Output:
	// worker-1
	// worker-2 true redcoord: not held: relection "scheduler": resigned
}
