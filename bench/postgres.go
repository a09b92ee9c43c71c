package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgUser is the unprivileged account PostgreSQL runs as when the
// benchmark runs as root: initdb and postgres refuse to run as root.
const pgUser = "worksteal-bench"

// errNoPostgres says how to get the server the peer benchmark needs.
var errNoPostgres = errors.New("PostgreSQL's initdb and postgres not found on PATH nor in /usr/lib/postgresql/*/bin: apt-get install postgresql, or brew install postgresql")

// pgServer is a throw-away PostgreSQL cluster: its own folder, port and
// process, no durability (fsync off, as the Redis servers here keep
// nothing on disk either).
type pgServer struct {
	dir     string
	port    int
	cmd     *exec.Cmd
	version string
}

// dsn is the connection string of the cluster's postgres database.
func (p *pgServer) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// pgBinDir finds the folder of initdb and postgres: PATH first (where
// initdb may be a wrapper), then Debian's versioned folders, newest first.
func pgBinDir() (string, error) {
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return cmp.Compare(vb, va)
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", errNoPostgres
}

// pgCredential is who the cluster runs as: nil (ourselves) unless we are
// root, then pgUser, created if missing.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(pgUser)
	if err != nil {
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", pgUser).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("create user %s for PostgreSQL (initdb refuses root): %w: %s", pgUser, err, out)
		}
		if u, err = user.Lookup(pgUser); err != nil {
			return nil, err
		}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// startPostgres makes a cluster in a temporary folder and starts it on a
// free port, as pgUser when we are root; stop it with stop.
func startPostgres(ctx context.Context) (*pgServer, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "worksteal-bench-pg-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	as := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, name), args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "HOME="+dir, "LC_ALL=C")
		if cred != nil {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return c
	}
	data := filepath.Join(dir, "data")
	if out, err := as("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := as("postgres", "-D", data, "-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	done, err := startChild(cmd, nil)
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	p := &pgServer{dir: dir, port: port, cmd: cmd}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, p.dsn())
		if err == nil {
			err = conn.QueryRow(ctx, "SHOW server_version").Scan(&p.version)
			conn.Close(ctx)
			if err == nil {
				p.version = strings.Fields(p.version + " ")[0]
				return p, nil
			}
		}
		if isClosed(done) || time.Now().After(deadline) || ctx.Err() != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
			p.stop()
			return nil, cmp.Or(ctx.Err(), fmt.Errorf("postgres did not answer on port %d (%v); its log:\n%s", port, err, log))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop shuts the cluster down (SIGINT: a fast shutdown) and removes it.
func (p *pgServer) stop() {
	stopChild(p.cmd, 10*time.Second)
	_ = os.RemoveAll(p.dir)
}
