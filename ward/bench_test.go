package ward

import (
	"testing"
	"time"
)

func BenchmarkBreakerAllow(b *testing.B) {
	br := NewBreaker(DefaultSre, t0)
	now := t0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		now = now.Add(50 * time.Microsecond) // 20k calls a second
		if c, ok := br.Allow(now, float64(i%100)/100); ok {
			if i%4 == 0 {
				c.Fail(now)
			} else {
				c.Pass(now)
			}
		}
		i++
	}
}

func BenchmarkBreakerAllowOnly(b *testing.B) {
	br := NewBreaker(DefaultSre, t0)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(50 * time.Microsecond)
		br.Allow(now, 0.5)
	}
}

func BenchmarkBreakerRatio(b *testing.B) {
	br := NewBreaker(DefaultSre, t0)
	now := t0
	for i := range 20000 {
		now = now.Add(500 * time.Microsecond)
		if c, ok := br.Allow(now, 0.9); ok && i%3 == 0 {
			c.Fail(now)
		} else if ok {
			c.Pass(now)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		br.Ratio(now)
	}
}

func BenchmarkBucketTake(b *testing.B) {
	bu := NewBucket(1e6, 100, t0)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Microsecond)
		bu.Take(now, 1)
	}
}

func BenchmarkShedderAllowCool(b *testing.B) {
	s := NewShedder(DefaultShed, t0)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(50 * time.Microsecond)
		if tk, ok := s.Allow(now, 300); ok {
			tk.Pass(now.Add(time.Millisecond))
		}
	}
}

func BenchmarkShedderAllowHot(b *testing.B) {
	s := NewShedder(DefaultShed, t0)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(50 * time.Microsecond)
		if tk, ok := s.Allow(now, 950); ok {
			tk.Pass(now.Add(time.Millisecond))
		}
	}
}

func BenchmarkSlidingTake(b *testing.B) {
	s := NewSliding(1000, time.Second)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(500 * time.Microsecond)
		s.Take(now)
	}
}

func BenchmarkCounterTake(b *testing.B) {
	c := NewCounter(1000, time.Second)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(500 * time.Microsecond)
		c.Take(now)
	}
}

func BenchmarkPeriodTake(b *testing.B) {
	p := NewPeriod(1000, time.Second, true)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(500 * time.Microsecond)
		p.Take(now)
	}
}

func BenchmarkBackoffDelay(b *testing.B) {
	bo := DefaultBackoff
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		bo.Delay(i%3+1, 0.37, 0)
		i++
	}
}

func BenchmarkLimiterAcquireRelease(b *testing.B) {
	l := NewLimiter(DefaultAimd)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Microsecond)
		if l.Acquire(now) {
			l.Release(now, now.Add(time.Millisecond), true)
		}
	}
}
