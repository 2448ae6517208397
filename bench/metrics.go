package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redcoord/redcoord"
	"github.com/redcoord/redcoord/redcoordotel"
)

// runPrefix begins every key a run writes; -clean deletes what killed runs
// left under it.
const runPrefix = "rcbench-"

// metricsRecorder is -metrics: the redcoord Clients' events, recorded by
// redcoordotel in an OpenTelemetry meter provider with a manual reader,
// and printed after the table.
type metricsRecorder struct {
	reader  *sdkmetric.ManualReader
	mp      *sdkmetric.MeterProvider
	observe func(redcoord.Event)
}

func newMetrics() (*metricsRecorder, error) {
	m := &metricsRecorder{reader: sdkmetric.NewManualReader()}
	m.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(m.reader))
	obs, err := redcoordotel.Observer(m.mp, nil)
	if err != nil {
		return nil, err
	}
	m.observe = obs
	return m, nil
}

// print collects the metrics and prints one line per metric and attribute
// set: a histogram's count and mean, a counter's value.
func (m *metricsRecorder) print(w io.Writer) error {
	ctx := context.Background()
	defer m.mp.Shutdown(ctx)
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(ctx, &rm); err != nil {
		return err
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, metric := range sm.Metrics {
			switch d := metric.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					mean := 0.0
					if dp.Count > 0 {
						mean = dp.Sum / float64(dp.Count)
					}
					lines = append(lines, fmt.Sprintf("%-26s %-44s count %7d  mean %9.3f ms",
						metric.Name, attrs(dp.Attributes.ToSlice()), dp.Count, mean*1000))
				}
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%-26s %-44s value %7d", metric.Name, attrs(dp.Attributes.ToSlice()), dp.Value))
				}
			}
		}
	}
	sort.Strings(lines)
	_, err := fmt.Fprintf(w, "\nmetrics (redcoordotel, the redcoord Clients' events over the run):\n%s\n",
		strings.Join(lines, "\n"))
	return err
}

// attrs writes attributes as k=v, comma-separated.
func attrs(kvs []attribute.KeyValue) string {
	parts := make([]string, len(kvs))
	for i, kv := range kvs {
		parts[i] = string(kv.Key) + "=" + kv.Value.String()
	}
	return strings.Join(parts, ",")
}
