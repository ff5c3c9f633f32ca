// Package readme holds the test that compiles every Go snippet of the
// repository's README files, so that what a new user copies builds. It has
// no code of its own.
package readme
