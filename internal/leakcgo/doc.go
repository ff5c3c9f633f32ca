// Package leakcgo checks the leak watch's stack record on a goroutine that
// C called back into: the record (runtime.Callers) must hold the Go frames
// of the callback and stop where the goroutine's stack ends and the C
// thread's begins, however the C code left its frame pointer. Its code is in a cgo file (amd64 Linux, cgo on);
// elsewhere the package is empty.
package leakcgo
