package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"
)

// runSeckill runs a flash sale: cfg.orders orders, cfg.concurrency at a
// time (one worker each), against a stock counter at stockKey. Each order
// takes the lock, reads the stock, writes it back one lower if any is left,
// and releases: a read-modify-write in two commands that only the lock keeps
// from selling one item twice.
func runSeckill(ctx context.Context, f *fleet, cfg *config, ct contender, stockKey string) (seckillRow, error) {
	if err := f.client(0).Set(ctx, stockKey, cfg.stock, 0).Err(); err != nil {
		return seckillRow{}, err
	}
	f.trips.Reset()
	var (
		next                  atomic.Int64
		sold, soldOut, failed atomic.Int64
		mu                    sync.Mutex // protects latency, sample
		latency               = newHist()
		sample                string
		wg                    sync.WaitGroup
	)
	start := time.Now()
	for w, lk := range f.locks {
		rdb := f.client(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(cfg.orders) && ctx.Err() == nil {
				t0 := time.Now()
				ok, err := order(ctx, lk, rdb, stockKey, cfg.timeout)
				if err != nil {
					mu.Lock()
					if sample == "" {
						sample = err.Error()
					}
					mu.Unlock()
				}
				switch {
				case ok: // an Unlock that failed after the sale: still a sale
					sold.Add(1)
				case err != nil:
					failed.Add(1)
					continue
				default:
					soldOut.Add(1)
				}
				record(&mu, latency, time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	trips := f.trips.Load()
	left, err := f.client(0).Get(context.Background(), stockKey).Int64()
	if err != nil {
		return seckillRow{}, err
	}
	row := seckillRow{
		Lock:        ct.name,
		Orders:      cfg.orders,
		Concurrency: len(f.locks),
		Stock:       cfg.stock,
		Seconds:     elapsed.Seconds(),
		Sold:        sold.Load(),
		SoldOut:     soldOut.Load(),
		Failed:      failed.Load(),
		LatencyP50:  ms(latency, 50),
		LatencyP99:  ms(latency, 99),
		LatencyMax:  ms(latency, 100),
		StockLeft:   left,
		ErrorSample: sample,
	}
	done := row.Sold + row.SoldOut + row.Failed
	row.OrdersPerS = float64(done) / row.Seconds
	row.Oversold = row.Sold - (int64(cfg.stock) - left)
	if done > 0 {
		row.RoundTrips = float64(trips) / float64(done)
	}
	return row, nil
}

// order places one order: true if it bought an item, false if none was left.
func order(ctx context.Context, lk locker, rdb redis.UniversalClient, stockKey string, timeout time.Duration) (bool, error) {
	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := lk.Lock(octx); err != nil {
		return false, err
	}
	ok, err := buy(octx, rdb, stockKey)
	uctx, ucancel := unlockCtx()
	defer ucancel()
	return ok, errors.Join(err, lk.Unlock(uctx))
}

// buy is the critical section: GET, then SET one lower.
func buy(ctx context.Context, rdb redis.UniversalClient, stockKey string) (bool, error) {
	n, err := rdb.Get(ctx, stockKey).Int64()
	if err != nil || n <= 0 {
		return false, err
	}
	if err := rdb.Set(ctx, stockKey, n-1, 0).Err(); err != nil {
		return false, err
	}
	return true, nil
}

func record(mu *sync.Mutex, h *hdrhistogram.Histogram, d time.Duration) {
	mu.Lock()
	defer mu.Unlock()
	_ = h.RecordValue(d.Microseconds())
}
