package pgxward

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// TestRecordingTheReadmeService: the README's configuration (a Breaker,
// the leak watch) with a Recorder, against a server that refuses every
// connection: each Acquire fails its dial, the breaker counts them, and
// the recording, fetched through RecordingHandler, replays with no
// difference. (No PostgreSQL needed: nothing connects.)
func TestRecordingTheReadmeService(t *testing.T) {
	cfg, err := ParseConfig("postgres://u@127.0.0.1:1/db?connect_timeout=1&pool_max_conns=4")
	if err != nil {
		t.Fatal(err)
	}
	cfg.LeakAfter = 30 * time.Second
	cfg.Ward = ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, time.Now())}
	cfg.Recorder = record.New(0)
	db, err := NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		if c, err := db.Acquire(ctx); err == nil {
			c.Release()
			t.Fatal("acquired from a server that refuses connections")
		}
		cancel()
	}
	rec := httptest.NewRecorder()
	db.RecordingHandler("main").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pool.wprc", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != record.MediaType {
		t.Fatalf("GET: %d %v", rec.Code, rec.Header())
	}
	rc, err := record.ReadRecording(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if rc.Ward().Breaker == nil || len(rc.Steps) == 0 {
		t.Fatalf("the recording: breaker %v, %d steps", rc.Ward().Breaker != nil, len(rc.Steps))
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
	if len(db.Recording()) == 0 {
		t.Fatal("Recording is empty")
	}
}
