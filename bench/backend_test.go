package main

import "testing"

// The bench names the server by its own name and version: Valkey's
// redis_version is the Redis version it is compatible with, not its own.
func TestServerVersion(t *testing.T) {
	for _, tc := range []struct{ info, name, version string }{
		{"# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n", "redis", "7.0.15"},
		{"# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\nserver_mode:standalone\r\n",
			"valkey", "8.0.1"},
	} {
		if name, version := serverVersion(tc.info); name != tc.name || version != tc.version {
			t.Errorf("serverVersion(%q) = %s %s; want %s %s", tc.info, name, version, tc.name, tc.version)
		}
	}
}
