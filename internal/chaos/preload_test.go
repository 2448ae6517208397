package chaos

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"reflect"
	"sync"
	"unsafe"

	"github.com/alicebob/miniredis/v2"

	"github.com/redcoord/redcoord/internal/scripts"
)

// loadScripts puts every script of the library into the cache of each
// server of w, as SCRIPT LOAD on its admin connection would. miniredis
// parses a script on every SCRIPT LOAD (an EVAL's parse it keeps), and
// loading every script on every server of every schedule was a third of
// the suite's time; so the sources are written into miniredis's cache
// directly. A miniredis whose cache is not where
// this looks gets SCRIPT LOAD.
func (w *world) loadScripts() {
	srcs := scriptSources()
	for i, m := range w.servers {
		if cache := scriptCache(m); cache != nil {
			m.Lock()
			for sha, src := range srcs {
				cache[sha] = src
			}
			m.Unlock()
			continue
		}
		for _, s := range scripts.All() {
			_ = s.Load(context.Background(), w.admin[i]).Err()
		}
	}
}

// scriptSources is the library's scripts by SHA1. Each parses (the
// scripts package's tests load every one into Redis).
var scriptSources = sync.OnceValue(func() map[string]string {
	srcs := make(map[string]string)
	for _, s := range scripts.All() {
		sum := sha1.Sum([]byte(s.Source()))
		srcs[hex.EncodeToString(sum[:])] = s.Source()
	}
	return srcs
})

// scriptCache returns m's script cache (SHA1 to source), nil if m has no
// field of that name and type.
func scriptCache(m *miniredis.Miniredis) map[string]string {
	f := reflect.ValueOf(m).Elem().FieldByName("scripts")
	if !f.IsValid() || f.Type() != reflect.TypeFor[map[string]string]() {
		return nil
	}
	return *(*map[string]string)(unsafe.Pointer(f.UnsafeAddr()))
}
