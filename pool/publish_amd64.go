//go:build !race

package pool

// publish stores v in *word, after every store the caller made before it:
// a release store. See the log of pairs in lane.go for why it is not
// atomic.StoreUint32 on amd64.
//
//go:noescape
func publish(word *uint32, v uint32)
