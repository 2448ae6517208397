package redcoordotel_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
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
		switch data := m.Data.(type) {
		case metricdata.Histogram[float64]:
			fmt.Println(m.Name, data.DataPoints[0].Count)
		case metricdata.Sum[int64]:
			fmt.Println(m.Name, data.DataPoints[0].Value)
		}
	}
	// Output:
	// redcoord.wait 1
	// redcoord.hold 1
	// redcoord.leases.lost 0
}

// Export a Client's metrics for Prometheus to scrape: the exporter is the
// MeterProvider's reader, and promhttp serves its registry. Here one
// request to the handler stands in for a scrape.
func Example_prometheus() {
	srv := miniredis.NewMiniRedis() // any Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	reg := prometheus.NewRegistry()
	exporter, err := otelprometheus.New(otelprometheus.WithRegisterer(reg), otelprometheus.WithoutScopeInfo())
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(ctx)
	obs, err := redcoordotel.Observer(mp, nil)
	if err != nil {
		log.Fatal(err)
	}
	c, err := redcoord.New(rdb, redcoord.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(ctx)
	// The lease, for the dashboard's renewal panel and alert (the dashboards
	// folder of this module); after New, since it is the Client's.
	lease, err := redcoordotel.Lease(mp, c)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Unregister() // once the Client is closed

	mu := rlock.New(c, "report")
	if err := mu.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	if err := mu.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	// In a service: http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	scrape := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(scrape, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.Lines(scrape.Body.String()) {
		if strings.HasPrefix(line, "redcoord_") && !strings.Contains(line, "_bucket") && !strings.Contains(line, "_sum") {
			fmt.Print(line)
		}
	}
	// Output:
	// redcoord_hold_seconds_count{outcome="released",primitive="rlock"} 1
	// redcoord_lease_seconds 30
	// redcoord_leases_lost_total{primitive="rlock"} 0
	// redcoord_wait_seconds_count{outcome="acquired",primitive="rlock"} 1
}
