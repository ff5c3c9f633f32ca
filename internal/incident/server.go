//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is a throw-away PostgreSQL cluster on 127.0.0.1 that the harness
// may freeze and restart: its own data directory under a temporary
// directory, trust authentication on loopback, removed by stop.
type server struct {
	bin  string // directory of initdb, pg_ctl and postgres
	dir  string // temporary directory holding data/, run/ and server.log
	port int
	cred *syscall.Credential // the postgres user's, when we are root
}

// findPGBin returns the newest Debian server install's bin directory
// (/usr/lib/postgresql/N/bin), else the directory of an initdb on PATH.
func findPGBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) < pgMajor(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if isExec(filepath.Join(dirs[i], "initdb")) && isExec(filepath.Join(dirs[i], "pg_ctl")) {
			return dirs[i], nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if p, err = filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(p), nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, pg_ctl): install Debian's postgresql package, or run ./scripts/test once")
}

// pgMajor reads N out of /usr/lib/postgresql/N/bin.
func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&0o111 != 0
}

// startServer makes and starts a cluster. The server refuses to run as
// root, so as root every server command runs as the postgres user, which
// owns the temporary directory.
func startServer(ctx context.Context) (*server, error) {
	bin, err := findPGBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "incident-pg-")
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			s.remove()
			return nil, fmt.Errorf("running as root needs the postgres user to own the server: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			s.remove()
			return nil, err
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		s.remove()
		return nil, err
	}
	if out, err := s.run(ctx, "initdb", "-D", s.data(), "-U", "postgres", "-E", "UTF8", "--locale=C",
		"--auth=trust", "--no-sync"); err != nil {
		s.remove()
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	for try := 0; ; try++ {
		s.port, err = freePort()
		if err == nil {
			var out []byte
			out, err = s.run(ctx, "pg_ctl", "-D", s.data(), "-l", filepath.Join(dir, "server.log"),
				"-o", s.options(), "-w", "-t", "60", "start")
			if err == nil {
				return s, nil
			}
			err = fmt.Errorf("pg_ctl start: %w\n%s", err, out)
		}
		if try == 4 {
			s.remove()
			return nil, err
		}
	}
}

func (s *server) data() string { return filepath.Join(s.dir, "data") }

// options are the postgres command-line settings: loopback only, its
// socket in the temporary directory, nothing synced.
func (s *server) options() string {
	return fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s "+
		"-c max_connections=100 -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
		s.port, s.dir)
}

// dsn is the URL the pools connect with.
func (s *server) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", s.port)
}

// run runs one of the server's programs as the cluster's owner.
func (s *server) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd.CombinedOutput()
}

// pids returns the postmaster's pid and those of its children (the
// backends and the server's own workers).
func (s *server) pids() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(s.data(), "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return nil, fmt.Errorf("postmaster.pid: %w", err)
	}
	pids := []int{pm}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so read after ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pm {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// signal sends sig to the postmaster and every child it has now.
func (s *server) signal(sig syscall.Signal) error {
	pids, err := s.pids()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill -%d %d: %w", sig, pid, err)
		}
	}
	return nil
}

// freeze stops every process of the server (SIGSTOP): connections stay
// open and nothing answers, as with a server stuck on a full disk or a
// long pause.
func (s *server) freeze() error { return s.signal(syscall.SIGSTOP) }

// thaw lets every process of the server go on (SIGCONT).
func (s *server) thaw() error { return s.signal(syscall.SIGCONT) }

// restart stops the server in mode (pg_ctl's -m: "fast" ends every session
// politely, "immediate" kills them as a crash would) and starts it again on
// the same port, waiting until it accepts connections.
func (s *server) restart(ctx context.Context, mode string) error {
	if out, err := s.run(ctx, "pg_ctl", "-D", s.data(), "-m", mode, "-w", "-t", "60", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	if out, err := s.run(ctx, "pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "server.log"),
		"-o", s.options(), "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	return nil
}

// stop thaws the server (a stopped one cannot shut down), stops it and
// removes its directory.
func (s *server) stop() {
	_ = s.thaw()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.run(ctx, "pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "-t", "20", "stop"); err != nil {
		if pids, err := s.pids(); err == nil {
			_ = syscall.Kill(pids[0], syscall.SIGKILL)
		}
	}
	s.remove()
}

func (s *server) remove() { _ = os.RemoveAll(s.dir) }

// freePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
