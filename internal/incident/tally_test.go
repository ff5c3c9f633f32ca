package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	timeout := 200 * ms
	tests := []struct {
		name    string
		samples []sample
		want    summary
	}{
		{"none", nil, summary{}},
		{"in time", []sample{{took: 5 * ms, ok: true, done: true}, {took: 200 * ms, done: true}},
			summary{calls: 2, ok: 1, errors: 1}},
		{"late and stuck", []sample{
			{took: 215 * ms, done: true},            // 15 ms over: noise, not late
			{took: 230 * ms, done: true},            // 30 ms over: late
			{took: 1500 * ms, ok: true, done: true}, // 1.3 s over: late, and long
			{took: 4 * time.Second},                 // still running
		}, summary{calls: 4, ok: 1, errors: 2, late: 3, lateLong: 2, stuck: 1,
			maxOverrun: 4*time.Second - timeout, p99Overrun: 4*time.Second - timeout}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize(tt.samples, timeout); got != tt.want {
				t.Errorf("summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSummarizeP99(t *testing.T) {
	// 200 calls: 198 in time, 2 late by 1 s and 2 s. The 99th percentile is
	// the 198th overrun in order (zero); the 199th would be the first late.
	samples := make([]sample, 0, 200)
	for range 198 {
		samples = append(samples, sample{took: time.Millisecond, ok: true, done: true})
	}
	samples = append(samples, sample{took: 1200 * time.Millisecond, done: true}, sample{took: 2200 * time.Millisecond, done: true})
	s := summarize(samples, 200*time.Millisecond)
	if s.p99Overrun != 0 || s.maxOverrun != 2*time.Second {
		t.Errorf("p99 %v, max %v; want 0 and 2s", s.p99Overrun, s.maxOverrun)
	}
	samples = append(samples, sample{took: 3200 * time.Millisecond, done: true}) // 201 calls: the 199th counts
	if s := summarize(samples, 200*time.Millisecond); s.p99Overrun != time.Second {
		t.Errorf("p99 of 201 calls = %v, want 1s", s.p99Overrun)
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	writeTable(&b, []row{
		{"freeze", "pgxward", summary{calls: 10, maxOverrun: 300 * time.Millisecond}},
		{"freeze", "pgxpool", summary{calls: 10, maxOverrun: 100 * time.Millisecond}},
		{"restart", "pgxward", summary{calls: 10}},
		{"restart", "pgxpool", summary{calls: 10}},
	})
	out := b.String()
	for _, want := range []string{"freeze pgxward/pgxpool 3.0x", "restart pgxward/pgxpool -", "300ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
