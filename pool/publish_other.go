//go:build !amd64 || race

package pool

import "sync/atomic"

// publish stores v in *word, after every store the caller made before it
// (see the log of pairs in lane.go).
func publish(word *uint32, v uint32) { atomic.StoreUint32(word, v) }
