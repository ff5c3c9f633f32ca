package wardpool

// Recording returns the recording of the Keeper's Config.Recorder as a
// file (see package pool/record), or nil without one. It copies up to the Recorder's limit under
// the Keeper's lock; writing the bytes out is the caller's, outside it.
// Safe for concurrent use.
func (k *Keeper[T]) Recording() []byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.rec == nil {
		return nil
	}
	return k.rec.Recording(nil)
}
