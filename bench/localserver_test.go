package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/redcoord/redcoord/internal/loopback"

	"github.com/stretchr/testify/require"
)

// With no -redis and no -cluster, -start auto picks redis-server when it
// is on PATH and the embedded miniredis when it is not, and the cells'
// default length follows; an explicit -start is taken as it is.
func TestStartChoice(t *testing.T) {
	bin := t.TempDir()
	fake := filepath.Join(bin, "redis-server")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\nexit 1\n"), 0o755))
	for _, tc := range []struct {
		path, start string
		args        []string
		fallback    bool
	}{
		{bin, "redis-server", nil, false},
		{t.TempDir(), "miniredis", nil, true},
		{bin, "miniredis", []string{"-start", "miniredis"}, false},
		{t.TempDir(), "redis-server", []string{"-start", "redis-server"}, false},
		{bin, "", []string{"-redis", "127.0.0.1:1"}, false},
	} {
		t.Setenv("PATH", tc.path)
		cfg, err := parseConfig(tc.args, io.Discard)
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.start, cfg.start, "PATH %s, %v", tc.path, tc.args)
		require.Equal(t, tc.fallback, cfg.fallback, "PATH %s, %v", tc.path, tc.args)
	}
}

// Without redis-server on PATH the default run says, on stderr, that it
// runs on the embedded miniredis and what that changes; -start
// redis-server fails, naming what is missing.
func TestNoRedisServerOnPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	code, out, errOut := bench(t, context.Background(), append(tinyCells, "-locks", "rfairlock", "-out", "")...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	require.Contains(t, errOut, "bench: no redis-server on PATH: running on the embedded miniredis")
	require.Contains(t, errOut, "not how fast they are")
	require.Contains(t, out, "backend: embedded miniredis")

	code, out, errOut = bench(t, context.Background(), append(tinyCells, "-start", "redis-server", "-out", "")...)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "bench: -start redis-server:")
	require.Contains(t, errOut, "apt-get install redis-server")
}

// With redis-server on PATH the default run starts one on a loopback
// port, says so on stderr, measures on it (server time included) and
// stops it at the end.
func TestStartsRedisServer(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server not on PATH (CI is set: CI installs it, so nothing may skip)")
		}
		t.Skip("redis-server not on PATH; install it (apt-get install redis-server) to run this test")
	}
	code, out, errOut := bench(t, context.Background(), append(tinyCells, "-locks", "rfairlock", "-out", "")...)
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	require.Regexp(t, `bench: started \S*redis-server \S+ on 127\.0\.0\.1:\d+ for this run`, errOut)
	m := regexp.MustCompile(`backend: redis-server at (127\.0\.0\.1:\d+) \(redis [^)]+\), started for this run`).FindStringSubmatch(out)
	require.NotNil(t, m, "stdout:\n%s", out)
	require.Regexp(t, `(?m)^\s*rfairlock\s+4\s.*\s\d+\.\d\d\s+\d+\.\d\s+\d\.\d{3}\s`, out,
		"round trips, then the server time, then Jain")
	require.Error(t, loopback.Ping(m[1]), "the server is stopped when the run ends")
}
