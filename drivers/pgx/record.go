package pgxward

import "net/http"

// Recording returns the recording of Config.Recorder (see
// wardpool.Keeper.Recording), or nil without one: every decision the pool
// made, its ward's included, to replay with pool.Replay or
// examples/replay. Safe for concurrent use.
func (p *Pool) Recording() []byte { return p.k.Recording() }

// RecordingHandler returns a handler that hands the recording over on
// demand, named after name, for a service to mount beside /metrics (see
// wardpool.Keeper.RecordingHandler).
func (p *Pool) RecordingHandler(name string) http.Handler { return p.k.RecordingHandler(name) }
