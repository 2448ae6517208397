package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redcoord/redcoord"
)

// config is what the flags ask for, checked.
type config struct {
	scenarios []string // in the order of scenarioNames

	redis    string   // host:port of one server; "" and no cluster: the bench starts one (start)
	cluster  []string // seed addresses of a Redis Cluster
	start    string   // with no redis or cluster: "redis-server" or "miniredis", the server the bench starts; else ""
	fallback bool     // start is miniredis because no redis-server is on PATH (-start auto)
	username string
	password string
	tls      bool

	locks    []string // mutex and seckill contenders, in the order of lockNames
	workers  []int    // one row per count (mutex, rwlock, semaphore)
	names    int      // mutex, semaphore: worker i takes name i % names
	mixes    []int    // rwlock: the reads' share of each mix, in percent
	permits  int      // semaphore: its total
	procs    []int    // Client counts the workers are spread over, one row each; 0: one Client per worker
	hold     time.Duration
	duration time.Duration // per cell
	poll     time.Duration // retry interval of the polling contenders

	orders      int // seckill
	concurrency int
	stock       int
	timeout     time.Duration // one order's deadline

	runs        int // capacity: how often each cell runs
	capWorkers  int // capacity: the parallel shape's workers, each on its own Client and name
	rate, burst int // ratelimit: events/s, burst

	out      string // folder for JSON and SVG; "" writes none
	json     bool   // JSON on stdout instead of the table
	progress string // auto, on, off

	logger  *slog.Logger         // the redcoord Clients' warnings (a fallback to polling, say); set by run
	clean   bool                 // delete the keys of earlier runs first
	metrics bool                 // record the redcoord Clients' events (redcoordotel) and print them
	observe func(redcoord.Event) // the Clients' observer; set by run with -metrics
}

// The default -duration. On the servers the bench starts it is long
// enough for a fair lock's queue of 64 workers holding 1ms to go round at
// least five times (a redis-server's hand-offs add about 0.5ms to each
// hold, the embedded miniredis's 2-3ms, on a loaded 2-core machine): with
// fewer rounds, a perfectly fair lock's counts differ by one between the
// workers served once more and the others, and Jain's index falls below
// 0.99 by arithmetic alone. The default run (25 cells) then takes about
// half a minute on a redis-server. A server of the user's is measured
// longer. A -hold longer than a third of it lengthens it to three holds.
const (
	defaultDurationStarted = time.Second
	defaultDurationMini    = 2 * time.Second
	defaultDurationServer  = 3 * time.Second
)

// maxSpan bounds -duration and -order-timeout: the histograms hold waits up
// to an hour. maxHold is below redsync's 8s expiry, so that no lease runs
// out under a hold and no lock is blamed for the harness's sleep.
const (
	maxSpan = time.Hour
	maxHold = 5 * time.Second
)

// scenarioNames lists every scenario in the order they run; all of them
// but capacity, a measurement of the server's cost rather than of the
// locks' behaviour, are what "all" asks for.
var scenarioNames = []string{"mutex", "rwlock", "semaphore", "seckill", "ratelimit", "capacity"}

// lockNames lists the mutex contenders in the order they run; "none" (no
// lock at all) runs in seckill only, where it shows what oversell looks like.
var lockNames = []string{"rlock", "rlock-poll", "rfairlock", "redsync", "redislock", "none"}

const usageHead = `Usage: go run ./bench [flags]

Compares redcoord's locks with each other and with the locks Go services use
today, on one contended name. With no flags it runs the mutex scenario on a
redis-server it starts on a free loopback port, when redis-server is on PATH,
else on an embedded miniredis (figures that show behaviour, not speed).
Point it at a server of yours with -redis host:port.

The workers run in this one OS process, spread over Clients (-procs): each
Client is a go-redis client of its own and, for redcoord, a redcoord Client
(its own pub/sub connection and watchdog), as separate services would have.

Flags:
`

// parseConfig reads args (without the program name). Errors, and -h, print
// the usage on stderr; the error returned is flag.ErrHelp or says what is wrong.
func parseConfig(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
	}
	var (
		c                         config
		scenarios, cluster, locks string
		workers, mixes, procs     string
	)
	fs.StringVar(&scenarios, "scenario", "mutex",
		"scenarios to run, comma-separated: "+strings.Join(scenarioNames, ", ")+", or all")
	fs.StringVar(&c.redis, "redis", "", "host:port of a Redis server (default: one the bench starts, see -start)")
	fs.StringVar(&c.start, "start", "auto", "with no -redis or -cluster, the server the bench starts for its run: "+
		"redis-server (found on PATH, on a free loopback port), miniredis (embedded), "+
		"or auto: redis-server when it is on PATH, else miniredis")
	fs.StringVar(&cluster, "cluster", "", "comma-separated seed addresses of a Redis Cluster")
	fs.StringVar(&c.username, "username", "", "Redis ACL user name (AUTH with -password)")
	fs.StringVar(&c.password, "password", "", "Redis password (AUTH)")
	fs.BoolVar(&c.tls, "tls", false, "connect to Redis with TLS")
	fs.StringVar(&locks, "locks", strings.Join(lockNames, ","),
		"contenders, comma-separated (mutex, seckill; rwlock always runs "+
			strings.Join(rwLockNames, " and ")+", semaphore "+strings.Join(semLockNames, ", ")+"): "+
			strings.Join(lockNames, ", "))
	fs.StringVar(&workers, "workers", "1,8,64", "worker counts, comma-separated: one row each (mutex, rwlock, semaphore)")
	fs.IntVar(&c.names, "names", 1, "lock names the workers are spread over, worker i on name i mod names; "+
		"exclusion is checked per name (mutex, semaphore)")
	fs.StringVar(&mixes, "mixes", "95,50",
		"the reads' share of each mix, in percent, comma-separated: one set of rows each (rwlock)")
	fs.IntVar(&c.permits, "permits", 8, "permits of the semaphore; each worker takes one at a time (semaphore)")
	fs.StringVar(&procs, "procs", "w,1", "Client counts the workers are spread over, comma-separated, one row each: "+
		"a count, or w for one Client per worker; "+
		"each Client is a go-redis client and a redcoord Client, all in this OS process")
	fs.DurationVar(&c.hold, "hold", time.Millisecond,
		"how long a worker holds the lock or its permit (mutex, rwlock, semaphore)")
	fs.DurationVar(&c.duration, "duration", 0, "how long each cell runs (mutex, rwlock, semaphore); default "+
		defaultDurationStarted.String()+" on a redis-server the bench starts, "+
		defaultDurationMini.String()+" on the embedded miniredis, "+
		defaultDurationServer.String()+" on a server of yours (-redis, -cluster), at least 3 -hold")
	fs.DurationVar(&c.poll, "poll", 10*time.Millisecond,
		"retry interval of rlock-poll (WithPolling) and redislock (LinearBackoff)")
	fs.IntVar(&c.orders, "orders", 500, "orders placed (seckill)")
	fs.IntVar(&c.concurrency, "concurrency", 100, "orders in flight at once (seckill)")
	fs.IntVar(&c.stock, "stock", 100, "items in stock (seckill)")
	fs.IntVar(&c.runs, "runs", 3,
		"how often each cell runs, one kind after another, each run starting one kind further along; "+
			"the table gives the medians (capacity)")
	fs.IntVar(&c.capWorkers, "capacity-workers", 32,
		"workers of the parallel shape, each on its own Client and lock name; "+
			"the sequential shape (one worker) runs beside it (capacity)")
	fs.DurationVar(&c.timeout, "order-timeout", 30*time.Second, "how long one order may wait for the lock (seckill)")
	fs.IntVar(&c.rate, "rate", 1000, "events a second the workers share (ratelimit)")
	fs.IntVar(&c.burst, "burst", 10, "the limiter's burst (ratelimit)")
	fs.StringVar(&c.out, "out", "bench-out",
		"folder for results.json, waits.svg, rwlock.svg and semaphore.svg; empty: write no files")
	fs.BoolVar(&c.json, "json", false, "print JSON on stdout instead of the table")
	fs.BoolVar(&c.clean, "clean", false,
		"first delete the keys that earlier runs left behind ("+runPrefix+"*: a run killed before its clean-up)")
	fs.BoolVar(&c.metrics, "metrics", false,
		"record the redcoord Clients' events as OpenTelemetry metrics (package redcoordotel) "+
			"and print them after the table")
	fs.StringVar(&c.progress, "progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), on, off")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	err := c.set(fs, scenarios, cluster, locks, workers, mixes, procs)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		fs.Usage()
	}
	return &c, err
}

// set fills the list fields of c from their flags and checks every value.
func (c *config) set(fs *flag.FlagSet, scenarios, cluster, locks, workers, mixes, procs string) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: bench takes flags only", fs.Arg(0))
	}
	var err error
	if c.scenarios, err = pick("-scenario", allBut(scenarios, "capacity"), scenarioNames); err != nil {
		return err
	}
	if c.locks, err = pick("-locks", locks, lockNames); err != nil {
		return err
	}
	if c.workers, err = numbers("-workers", workers, "count", 1, 10000); err != nil {
		return err
	}
	if c.mixes, err = numbers("-mixes", mixes, "percentage", 0, 100); err != nil {
		return err
	}
	if c.procs, err = processes(procs); err != nil {
		return err
	}
	if c.rate < 1 || c.rate > 1_000_000 || c.burst < 1 || c.burst > 1_000_000 {
		return fmt.Errorf("-rate %d, -burst %d: each must be from 1 to 1000000", c.rate, c.burst)
	}
	if slices.Contains(c.scenarios, "mutex") && !slices.ContainsFunc(c.locks, func(l string) bool { return l != "none" }) {
		return errors.New("-locks: the mutex scenario needs a lock; none runs in seckill only")
	}
	if cluster != "" {
		if c.redis != "" {
			return errors.New("-redis and -cluster: give one, not both")
		}
		for _, a := range strings.Split(cluster, ",") {
			if a = strings.TrimSpace(a); a == "" {
				return fmt.Errorf("-cluster %q: an empty address", cluster)
			}
			c.cluster = append(c.cluster, a)
		}
	}
	if c.redis == "" && c.cluster == nil && (c.username != "" || c.password != "" || c.tls) {
		return errors.New("-username, -password and -tls need -redis or -cluster: " +
			"the server the bench starts takes none of them")
	}

	if err := c.setStart(flagSet(fs, "start")); err != nil {
		return err
	}
	if !flagSet(fs, "duration") {
		switch c.start {
		case "redis-server":
			c.duration = defaultDurationStarted
		case "miniredis":
			c.duration = defaultDurationMini
		default:
			c.duration = defaultDurationServer
		}
		c.duration = max(c.duration, 3*c.hold) // a long -hold: a few holds a worker
	}
	for _, d := range []struct {
		name     string
		v        time.Duration
		min, max time.Duration
	}{{"-hold", c.hold, 0, maxHold}, {"-duration", c.duration, time.Millisecond, maxSpan},
		{"-poll", c.poll, time.Millisecond, time.Minute}, {"-order-timeout", c.timeout, time.Millisecond, maxSpan}} {
		if d.v < d.min || d.v > d.max {
			return fmt.Errorf("%s %v: must be from %v to %v", d.name, d.v, d.min, d.max)
		}
	}
	if c.hold >= c.duration {
		return fmt.Errorf("-hold %v: must be shorter than -duration %v", c.hold, c.duration)
	}
	for _, n := range []struct {
		name string
		v    int
		min  int
	}{{"-names", c.names, 1}, {"-permits", c.permits, 1},
		{"-orders", c.orders, 1}, {"-concurrency", c.concurrency, 1}, {"-stock", c.stock, 0},
		{"-runs", c.runs, 1}, {"-capacity-workers", c.capWorkers, 1}} {
		if n.v < n.min {
			return fmt.Errorf("%s %d: must be at least %d", n.name, n.v, n.min)
		}
	}
	switch c.progress {
	case "auto", "on", "off":
	default:
		return fmt.Errorf("-progress %q: want auto, on or off", c.progress)
	}
	return nil
}

// writable checks, before a run that may take minutes, that the folder dir
// can be made and written to: it makes it, and writes and removes a file.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".bench-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}
