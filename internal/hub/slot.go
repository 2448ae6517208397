package hub

import (
	"context"
	"strings"
)

// KeySlot returns the Redis Cluster slot of key: CRC16 (XMODEM) of its hash
// tag, the part between the first "{" and the next "}" when that is not
// empty, or of the whole key, modulo 16384.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// ownerOf asks the cluster (CLUSTER SLOTS, one round trip) which primary
// serves channel's slot now. The cluster client's own map may be stale right
// after a move or a failover, which is when this is called.
func (h *Hub) ownerOf(ctx context.Context, channel string) (string, error) {
	slots, err := h.cluster.ClusterSlots(ctx).Result()
	if err != nil {
		return "", err
	}
	slot := KeySlot(channel)
	for _, r := range slots {
		if r.Start <= slot && slot <= r.End && len(r.Nodes) > 0 {
			return r.Nodes[0].Addr, nil
		}
	}
	return "", errNoOwner
}
