package ward

import (
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// BenchmarkPeerRateAllowN is golang.org/x/time/rate's token bucket on the
// same traffic as BenchmarkBucketTake: the Go precedent for passing the time
// in. It takes a mutex on every call, which Bucket leaves to its owner.
func BenchmarkPeerRateAllowN(b *testing.B) {
	l := rate.NewLimiter(1e6, 100)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Microsecond)
		l.AllowN(now, 1)
	}
}

// TestPeerRateAgreesWithBucket checks that the two buckets admit the same
// calls on one bursty schedule, so the benchmark compares like with like.
func TestPeerRateAgreesWithBucket(t *testing.T) {
	ours := NewBucket(20, 20, t0)
	peer := rate.NewLimiter(20, 20)
	peer.AllowN(t0, 0) // start the peer's clock at t0, full
	for burst := range 4 {
		turn := at(time.Duration(2*burst+1) * time.Second)
		for i := range 40 {
			now := turn.Add(time.Duration(i-20) * 2500 * time.Microsecond)
			if a, b := ours.Take(now, 1), peer.AllowN(now, 1); a != b {
				t.Fatalf("burst %d call %d: Bucket %v, x/time/rate %v", burst, i, a, b)
			}
		}
	}
}
