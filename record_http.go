package wardpool

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/wardpool/wardpool/pool/record"
)

// RecordingHandler returns a handler that hands the Keeper's recording
// over on demand (see Recording), for a service to mount beside its
// /metrics:
//
//	http.Handle("/debug/pool.wprc", k.RecordingHandler("main"))
//
// It answers GET and HEAD with the recording as an attachment of type
// record.MediaType named after the pool and the Keeper's clock, as
// "main-20260102T030405Z.wprc" (name held to letters, digits, '.', '-' and
// '_'); 404 without a Config.Recorder; 405 to other methods. Each request
// copies the recording under the Keeper's lock, as Recording does; the
// handler is safe for concurrent use. Mount it where only operators reach:
// a recording names no resource, but it tells how the pool was used.
func (k *Keeper[T]) RecordingHandler(name string) http.Handler {
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, name)
	if name == "" {
		name = "pool"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		data := k.Recording()
		if data == nil {
			http.Error(w, "wardpool: this pool has no Recorder (Config.Recorder)", http.StatusNotFound)
			return
		}
		file := name + "-" + k.clock.Now().UTC().Format("20060102T150405Z") + record.Ext
		h := w.Header()
		h.Set("Content-Type", record.MediaType)
		h.Set("Content-Disposition", `attachment; filename="`+file+`"`)
		h.Set("Content-Length", strconv.Itoa(len(data)))
		h.Set("Cache-Control", "no-store")
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(data)
	})
}
