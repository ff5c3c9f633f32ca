package engine

import "testing"

func BenchmarkHourProbe(b *testing.B) {
	b.ReportAllocs()
	s, _ := Builtin("steady")
	s.Seconds, s.Rate, s.Limits.Size, s.Limits.Idle = 3600, 1000, 64, 64
	for b.Loop() {
		if _, err := Run(s, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
