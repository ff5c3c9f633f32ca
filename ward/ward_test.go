package ward

import "testing"

func TestWardIsZero(t *testing.T) {
	if !(Ward{}).IsZero() {
		t.Fatal("the zero Ward is not zero")
	}
	b := DefaultBackoff
	for name, w := range map[string]Ward{
		"breaker": {Breaker: NewBreaker(DefaultSre, t0)},
		"bucket":  {Bucket: NewBucket(1, 1, t0)},
		"backoff": {Backoff: &b},
		"shedder": {Shedder: NewShedder(DefaultShed, t0)},
		"limiter": {Limiter: NewLimiter(DefaultAimd)},
	} {
		if w.IsZero() {
			t.Errorf("a Ward with a %s reads as zero", name)
		}
	}
}

func TestGuardNames(t *testing.T) {
	for g, want := range map[Guard]string{
		GuardNone: "none", GuardBreaker: "breaker", GuardShedder: "shedder",
		GuardBucket: "bucket", GuardBackoff: "backoff", GuardLimiter: "limiter", 42: "guard(42)",
	} {
		if g.String() != want {
			t.Errorf("Guard(%d).String() = %q, want %q", g, g.String(), want)
		}
	}
}
