package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// wide returns the rows of a default run whose cells are as wide as they
// get: a 10-letter lock, waits of seconds, thousands of hand-off µs,
// server time, hundreds of FIFO violations.
func wide() *results {
	us := 1234.5
	c := common{Lock: "rlock-poll", Workers: 64, Procs: 64, AcqPerSec: 1234, WaitP50: 1999.99, WaitP99: 2999.9,
		WaitMax: 2999.9, Starved: 64, RoundTrips: 54.36, ServerUs: &us, Jain: 0.123, Errors: 3, ErrorSample: "boom"}
	r := &results{Backend: "redis-server at 127.0.0.1:65535 (redis 7.0.15), started for this run",
		Settings: settings{HoldMs: 1, DurationS: 3, Permits: 8, Orders: 500, Concurrency: 100, Stock: 100}}
	r.Mutex = []mutexRow{{common: c, GapP50: 73727, Gaps: 1, FIFO: 1234}}
	r.RWLock = []rwRow{{Mix: "read-mostly 95%", common: c, XRlock: 1.23, WriteWaitP99: 2999.9, MaxReaders: 64}}
	c.Lock = "rsemaphore-fair"
	r.Semaphore = []semRow{{Permits: 8, common: c, MaxInside: 8, FIFO: 1234}}
	r.Seckill = []seckillRow{{Lock: "rlock-poll", Procs: 100, OrdersPerS: 1234, Sold: 100, SoldOut: 400, Failed: 0,
		LatencyP50: 1999.9, LatencyP99: 29999.9, LatencyMax: 30000.0, RoundTrips: 54.36, ServerUs: &us}}
	return r
}

// Every line of the tables and their titles fits in 120 columns; the default run's mutex
// table does in one table, and a section too wide for one (rwlock, or
// mutex with a names column) is two, each with the columns that say whose
// a row is.
func TestTableWidth(t *testing.T) {
	r := wide()
	var out bytes.Buffer
	require.NoError(t, writeTable(&out, r))
	for _, l := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(l, "backend:") && !strings.Contains(l, "the first: boom") {
			require.LessOrEqual(t, utf8.RuneCountInString(l), maxWidth, "%q", l)
		}
	}
	text := out.String()
	require.Equal(t, 1, strings.Count(text, "p50 µs"), "the mutex table is one table:\n%s", text)
	require.Equal(t, 2, strings.Count(text, "     mix"), "the rwlock table is two:\n%s", text)
	require.Contains(t, text, "  rlock-poll, 64 workers on 64 Clients: 3 errors, the first: boom\n")

	r.Mutex[0].Names = 64
	out.Reset()
	require.NoError(t, writeTable(&out, r))
	mutex := out.String()[:strings.Index(out.String(), "rwlock:")]
	require.Equal(t, 2, strings.Count(mutex, "lock  workers  clients  names"), "two tables:\n%s", mutex)
	for _, l := range strings.Split(mutex, "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(l), maxWidth, "%q", l)
	}
}

// parts packs columns into as few tables of at most maxWidth as it can,
// of about the same width, each led by the key columns, and takes a column
// wider than a table alone.
func TestParts(t *testing.T) {
	require.Equal(t, [][]int{{0, 1, 2}}, parts([]int{10, 10, 10}, 1))
	require.Equal(t, [][]int{{0, 1}, {0, 2}}, parts([]int{10, 60, 60}, 1))
	require.Equal(t, [][]int{{0, 1, 2, 3}, {0, 4, 5}}, parts([]int{10, 30, 30, 30, 30, 30}, 1),
		"three and two, not four and one")
	require.Equal(t, [][]int{{0, 1}, {0, 2}, {0, 3}}, parts([]int{10, 200, 10, 200}, 1))
	require.Equal(t, [][]int{{0}}, parts([]int{10}, 1))
}

// wrap breaks long lines between words, indenting what it adds.
func TestWrap(t *testing.T) {
	long := strings.Repeat("word ", 30) + "end"
	got := wrap("short\n  " + long)
	lines := strings.Split(got, "\n")
	require.Equal(t, "short", lines[0])
	require.True(t, strings.HasPrefix(lines[1], "  word "))
	require.True(t, strings.HasPrefix(lines[2], "    word "), "%q", lines[2])
	for _, l := range lines {
		require.LessOrEqual(t, utf8.RuneCountInString(l), maxWidth)
	}
	require.Equal(t, strings.Fields("short "+long), strings.Fields(got))
}
