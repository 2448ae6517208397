package redcoordotel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/redcoordotel"
	"github.com/redcoord/redcoord/rlock"
)

// Record a Client's events as OpenTelemetry metrics. Here a manual reader
// collects them; in a service, the MeterProvider exports them (Prometheus,
// OTLP, stdout).
func Example() {
	srv := miniredis.NewMiniRedis() // any Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)

	obs, err := redcoordotel.Observer(mp, nil) // a MeterProvider (and a TracerProvider, or nil)
	if err != nil {
		log.Fatal(err)
	}
	c, err := redcoord.New(rdb, redcoord.WithObserver(obs))
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
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		fmt.Println(m.Name, m.Data.(metricdata.Histogram[float64]).DataPoints[0].Count)
	}
	// Output:
	// redcoord.wait 1
	// redcoord.hold 1
}
