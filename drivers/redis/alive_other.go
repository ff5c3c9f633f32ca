//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package redisward

import "net"

// alive cannot peek at a socket on this system; it reports every connection
// open, and a dead one is found by the command that fails on it.
func alive(net.Conn) error { return nil }
