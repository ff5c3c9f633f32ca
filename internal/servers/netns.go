package servers

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Netns is a network namespace of the test's own, joined to the test's
// namespace by a veth pair, for a black hole the kernel sees: servers
// started in it (StartPostgresIn, StartRedisIn) are reached over the pair,
// and Silence takes the namespace's end of the link down, so that every
// packet in either direction is lost and nothing answers, not even with a
// reset. The test's kernel then retransmits, probes and gives up as it
// would for a host that vanished: TCP keepalive and TCP_USER_TIMEOUT are
// exercised, which a proxy holding bytes in user space (Proxy.BlackHole)
// cannot do.
//
// The namespace's addresses are in 198.18.0.0/15 (RFC 2544's block for
// benchmarks), one /28 per namespace. The test's end holds permanent
// neighbour entries for them, so that while the link is down the kernel
// keeps sending into it rather than failing connects with "no route to
// host" once ARP gives up. Its methods are safe for concurrent use.
type Netns struct {
	// Name is the namespace's name (ip netns).
	Name string
	// Addrs are the namespace's addresses on the link, as many as
	// StartNetns was asked for; a test that gives each client its own
	// address can tell their connections apart (Established).
	Addrs []string

	host, peer string // the link's two ends: in the test's namespace, in Name
}

// StartNetns makes a namespace with n addresses (1 to 13) on a veth link
// to the test's namespace, or skips the test with the reason when the
// machine forbids it (not root, no ip command, no namespaces). It is
// deleted, with its link, when the test ends; stop the servers in it
// first (the helpers that start them do, as their cleanups run earlier).
func StartNetns(t testing.TB, n int) *Netns {
	t.Helper()
	if n < 1 || n > 13 {
		t.Fatalf("servers: StartNetns: %d addresses, want 1 to 13", n)
	}
	if os.Geteuid() != 0 {
		t.Skip("a black hole in a network namespace needs root (ip netns add)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command (iproute2) for a network namespace: ./scripts/test installs it")
	}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	tag := hex.EncodeToString(id[:])
	ns := &Netns{Name: "wardpool-" + tag, host: "wp" + tag + "h", peer: "wp" + tag + "n"}
	if out, err := exec.Command("ip", "netns", "add", ns.Name).CombinedOutput(); err != nil {
		t.Skipf("this machine forbids network namespaces: ip netns add: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(ns.delete)
	// 198.18.0.0/15 in /28s: the first address is the test's end.
	block := binary.BigEndian.Uint32(id[:]) % (1 << 13)
	base := net.IPv4(198, 18, 0, 0).To4()
	ip := func(host uint32) string {
		v := binary.BigEndian.Uint32(base) + block<<4 + host
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], v)
		return net.IP(b[:]).String()
	}
	hostMAC := "02:77:70:" + tag[0:2] + ":" + tag[2:4] + ":01"
	peerMAC := "02:77:70:" + tag[0:2] + ":" + tag[2:4] + ":02"
	cmds := [][]string{
		{"ip", "link", "add", "name", ns.host, "address", hostMAC, "type", "veth", "peer", "name", ns.peer, "address", peerMAC, "netns", ns.Name},
		{"ip", "addr", "add", ip(1) + "/28", "dev", ns.host},
		{"ip", "link", "set", ns.host, "up"},
		{"ip", "-n", ns.Name, "link", "set", "lo", "up"},
		{"ip", "-n", ns.Name, "link", "set", ns.peer, "up"},
		{"ip", "-n", ns.Name, "neigh", "replace", ip(1), "lladdr", hostMAC, "dev", ns.peer, "nud", "permanent"},
	}
	for i := range n {
		a := ip(uint32(2 + i))
		ns.Addrs = append(ns.Addrs, a)
		cmds = append(cmds,
			[]string{"ip", "-n", ns.Name, "addr", "add", a + "/28", "dev", ns.peer},
			[]string{"ip", "neigh", "replace", a, "lladdr", peerMAC, "dev", ns.host, "nud", "permanent"})
	}
	for _, c := range cmds {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("servers: %s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	return ns
}

// delete removes the namespace and the test's end of the link (which
// the kernel would remove with the namespace, but not at once).
func (ns *Netns) delete() {
	_ = exec.Command("ip", "netns", "del", ns.Name).Run()
	_ = exec.Command("ip", "link", "del", ns.host).Run()
}

// Command returns cmd to be run inside the namespace (ip netns exec).
func (ns *Netns) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// Silence takes the namespace's end of the link down: from now on every
// packet between the namespace and the test is lost, in both directions,
// with no reset and no error on the test's side. The servers inside keep
// running and keep their connections.
func (ns *Netns) Silence() error { return ns.link("down") }

// Restore brings the link back up: what the kernels retransmit gets
// through again.
func (ns *Netns) Restore() error { return ns.link("up") }

func (ns *Netns) link(state string) error {
	if out, err := exec.Command("ip", "-n", ns.Name, "link", "set", ns.peer, state).CombinedOutput(); err != nil {
		return fmt.Errorf("servers: ip link set %s %s: %v: %s", ns.peer, state, err, out)
	}
	return nil
}

// Established returns the local ports of the test's TCP connections to
// addr:port that the kernel holds as established now (from
// /proc/net/tcp, IPv4). A connection the kernel gave up on, or one the
// client closed, is not among them.
func Established(addr string, port int) (map[int]bool, error) {
	ip := net.ParseIP(addr).To4()
	if ip == nil {
		return nil, fmt.Errorf("servers: Established: %q is not an IPv4 address", addr)
	}
	// /proc/net/tcp prints the address as a 32-bit word in the machine's
	// byte order.
	want := fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip), port)
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ports := map[int]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 || fs[2] != want || fs[3] != "01" { // 01: ESTABLISHED
			continue
		}
		_, p, ok := strings.Cut(fs[1], ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(p, 16, 16)
		if err != nil {
			continue
		}
		ports[int(n)] = true
	}
	return ports, sc.Err()
}
