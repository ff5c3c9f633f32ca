package wardpool

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// TestRecordingHandler: the handler hands over a recording that replays,
// with the format's type and the pool's name in the file name; HEAD gives
// the headers alone, POST is refused, and a Keeper without a Recorder
// answers 404.
func TestRecordingHandler(t *testing.T) {
	c := newFakeClock()
	k, _ := newTestKeeper(t, &dialer{}, Config[*res]{
		Clock:    c,
		Ward:     ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, c.Now())},
		Recorder: record.New(0),
	})
	l := mustAcquire(t, k)
	l.Release()
	h := k.RecordingHandler("main db")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pool.wprc", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != record.MediaType {
		t.Fatalf("GET: %d %v", rec.Code, rec.Header())
	}
	if d := rec.Header().Get("Content-Disposition"); !strings.Contains(d, `filename="main_db-`) || !strings.HasSuffix(d, `.wprc"`) {
		t.Fatalf("Content-Disposition %q", d)
	}
	if err := record.Replay(rec.Body.Bytes()); err != nil {
		t.Fatalf("the recording handed over: %v", err)
	}
	head := httptest.NewRecorder()
	h.ServeHTTP(head, httptest.NewRequest(http.MethodHead, "/", nil))
	if head.Code != http.StatusOK || head.Body.Len() != 0 || head.Header().Get("Content-Length") == "" {
		t.Fatalf("HEAD: %d, %d bytes", head.Code, head.Body.Len())
	}
	post := httptest.NewRecorder()
	h.ServeHTTP(post, httptest.NewRequest(http.MethodPost, "/", nil))
	if post.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", post.Code)
	}
	off, _ := newTestKeeper(t, &dialer{}, Config[*res]{})
	none := httptest.NewRecorder()
	off.RecordingHandler("").ServeHTTP(none, httptest.NewRequest(http.MethodGet, "/", nil))
	if none.Code != http.StatusNotFound {
		t.Fatalf("without a Recorder: %d", none.Code)
	}
}

// A service hands its pool's recording over beside its metrics; fetch it
// with `go run ./examples/replay http://127.0.0.1:8080/debug/pool.wprc`.
func ExampleKeeper_RecordingHandler() {
	k, err := NewKeeper(Config[*res]{
		Dial:     (&dialer{}).Dial,
		Close:    (&dialer{}).Close,
		Ward:     ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, time.Now())},
		Recorder: record.New(0),
	})
	if err != nil {
		panic(err)
	}
	defer k.Close(context.Background())
	mux := http.NewServeMux()
	mux.Handle("/debug/pool.wprc", k.RecordingHandler("main"))
	// mux.Handle("/metrics", promhttp.Handler()) beside it, then
	// http.ListenAndServe("127.0.0.1:8080", mux).
}
