// Package zkclient is kbroker's ZooKeeper session: zookeeper.connect with a
// chroot, the session and connection timeouts, path operations relative to
// the chroot, and hooks run on every new session, which is how an ephemeral
// registration survives a session expiry. It wraps
// github.com/go-zookeeper/zk, which reconnects by itself and opens a new
// session after an expiry but knows nothing of chroots.
package zkclient

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Errors of ZooKeeper operations, as go-zookeeper returns them.
var (
	ErrNoNode         = zk.ErrNoNode
	ErrNodeExists     = zk.ErrNodeExists
	ErrBadVersion     = zk.ErrBadVersion
	ErrNotEmpty       = zk.ErrNotEmpty
	ErrSessionExpired = zk.ErrSessionExpired
)

// Config is the ZooKeeper part of the broker config, Kafka's names.
type Config struct {
	// Connect is zookeeper.connect: "host:port[,host:port...][/chroot]".
	Connect string
	// SessionTimeout is zookeeper.session.timeout.ms (Kafka: 18 s).
	SessionTimeout time.Duration
	// ConnectionTimeout is zookeeper.connection.timeout.ms: how long Dial
	// waits for a session (Kafka: the session timeout when unset).
	ConnectionTimeout time.Duration
	Logger            *slog.Logger
}

// DefaultSessionTimeout is Kafka's zookeeper.session.timeout.ms default.
const DefaultSessionTimeout = 18 * time.Second

// ParseConnect splits zookeeper.connect into servers and chroot ("" for
// none). The chroot applies to all servers and is written once, after the
// last one, as Kafka and ZooKeeper's own client read it.
func ParseConnect(s string) (servers []string, chroot string, err error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s, chroot = s[:i], strings.TrimRight(s[i:], "/")
	}
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h)
		}
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("zookeeper.connect %q names no server", s)
	}
	if strings.Contains(chroot, "//") {
		return nil, "", fmt.Errorf("zookeeper.connect chroot %q is not a valid path", chroot)
	}
	return servers, chroot, nil
}

// Client is one ZooKeeper session at a time for one broker. Paths given to
// its methods are relative to the chroot. Safe for concurrent use.
type Client struct {
	conn   *zk.Conn
	chroot string
	log    *slog.Logger
	// sessionTimeout is the configured zookeeper.session.timeout.ms.
	sessionTimeout time.Duration

	mu struct {
		sync.Mutex
		sessionID int64
		hooks     []func()
		sessions  int // sessions established so far
	}
	kick chan struct{} // session state changed
	done chan struct{}
	wg   sync.WaitGroup
}

type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zookeeper client", "msg", fmt.Sprintf(format, args...))
}

// Dial connects, creating the chroot path first if it does not exist (as
// Kafka does), and waits up to ConnectionTimeout for a session.
func Dial(cfg Config) (*Client, error) {
	servers, chroot, err := ParseConnect(cfg.Connect)
	if err != nil {
		return nil, err
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.ConnectionTimeout <= 0 {
		cfg.ConnectionTimeout = cfg.SessionTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if chroot != "" {
		root := &Client{log: log, kick: make(chan struct{}, 1), done: make(chan struct{})}
		if err := root.open(servers, cfg); err != nil {
			return nil, err
		}
		err := root.EnsurePath(chroot)
		root.Close()
		if err != nil {
			return nil, fmt.Errorf("creating chroot %s: %w", chroot, err)
		}
	}
	c := &Client{chroot: chroot, log: log, sessionTimeout: cfg.SessionTimeout, kick: make(chan struct{}, 1), done: make(chan struct{})}
	if err := c.open(servers, cfg); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Client) open(servers []string, cfg Config) error {
	conn, _, err := zk.Connect(servers, cfg.SessionTimeout,
		zk.WithLogger(zkLogger{c.log}), zk.WithLogInfo(false), zk.WithEventCallback(c.onEvent))
	if err != nil {
		return fmt.Errorf("zookeeper %v: %w", servers, err)
	}
	c.conn = conn
	deadline := time.NewTimer(cfg.ConnectionTimeout)
	defer deadline.Stop()
	for conn.State() != zk.StateHasSession {
		select {
		case <-c.kick:
		case <-deadline.C:
			conn.Close()
			return fmt.Errorf("zookeeper %v: no session within zookeeper.connection.timeout.ms (%v)", servers, cfg.ConnectionTimeout)
		}
	}
	c.mu.Lock()
	c.mu.sessionID = conn.SessionID()
	c.mu.sessions = 1
	c.mu.Unlock()
	c.wg.Add(1)
	go c.watchSessions()
	return nil
}

// onEvent runs on go-zookeeper's goroutine for every event; it must not block.
func (c *Client) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// watchSessions runs the OnNewSession hooks each time a session other than
// the last one is established (after an expiry).
func (c *Client) watchSessions() {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			return
		case <-c.kick:
		}
		if c.conn.State() != zk.StateHasSession {
			continue
		}
		id := c.conn.SessionID()
		c.mu.Lock()
		if id == c.mu.sessionID || id == 0 {
			c.mu.Unlock()
			continue
		}
		c.mu.sessionID = id
		c.mu.sessions++
		hooks := append([]func(){}, c.mu.hooks...)
		c.mu.Unlock()
		c.log.Info("new zookeeper session", "session", fmt.Sprintf("0x%x", id))
		for _, h := range hooks {
			h()
		}
	}
}

// OnNewSession registers f to run, on the client's session goroutine, after
// every new session following an expiry. f must not block for long.
func (c *Client) OnNewSession(f func()) {
	c.mu.Lock()
	c.mu.hooks = append(c.mu.hooks, f)
	c.mu.Unlock()
}

// SessionID is the current session's id (0 while there is none).
func (c *Client) SessionID() int64 { return c.conn.SessionID() }

// Sessions counts the sessions established so far (1 + expiries recovered).
func (c *Client) Sessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.sessions
}

// Close ends the session (its ephemeral znodes go at once) and stops the
// client's goroutine.
func (c *Client) Close() {
	select {
	case <-c.done:
		return
	default:
	}
	close(c.done)
	c.conn.Close()
	c.wg.Wait()
}

func (c *Client) abs(path string) string {
	if path == "/" {
		if c.chroot != "" {
			return c.chroot
		}
		return "/"
	}
	return c.chroot + path
}

func (c *Client) rel(path string) string {
	if c.chroot != "" && strings.HasPrefix(path, c.chroot) {
		if p := path[len(c.chroot):]; p != "" {
			return p
		}
		return "/"
	}
	return path
}

// Get reads a znode.
func (c *Client) Get(path string) ([]byte, *zk.Stat, error) { return c.conn.Get(c.abs(path)) }

// GetW reads a znode and sets a data watch.
func (c *Client) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	return c.conn.GetW(c.abs(path))
}

// Children lists a znode's children.
func (c *Client) Children(path string) ([]string, *zk.Stat, error) {
	return c.conn.Children(c.abs(path))
}

// ChildrenW lists a znode's children and sets a child watch.
func (c *Client) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	return c.conn.ChildrenW(c.abs(path))
}

// Exists reports whether a znode exists.
func (c *Client) Exists(path string) (bool, *zk.Stat, error) { return c.conn.Exists(c.abs(path)) }

// ExistsW is Exists with a watch (fires on creation, change and deletion).
func (c *Client) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return c.conn.ExistsW(c.abs(path))
}

// Create creates a znode (flags: zk.FlagEphemeral, zk.FlagSequence) with an
// open ACL and returns its path, relative to the chroot.
func (c *Client) Create(path string, data []byte, flags int32) (string, error) {
	p, err := c.conn.Create(c.abs(path), data, flags, zk.WorldACL(zk.PermAll))
	return c.rel(p), err
}

// Set writes a znode's data if its version matches (-1: any).
func (c *Client) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	return c.conn.Set(c.abs(path), data, version)
}

// Delete removes a znode if its version matches (-1: any).
func (c *Client) Delete(path string, version int32) error {
	return c.conn.Delete(c.abs(path), version)
}

// EnsurePath creates path and its missing parents as empty persistent znodes.
func (c *Client) EnsurePath(path string) error {
	cur := ""
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		if part == "" {
			continue
		}
		cur += "/" + part
		_, err := c.conn.Create(c.abs(cur), nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("creating %s: %w", cur, err)
		}
	}
	return nil
}

// CreateWithParents creates path, creating missing parents as empty
// persistent znodes.
func (c *Client) CreateWithParents(path string, data []byte, flags int32) (string, error) {
	p, err := c.Create(path, data, flags)
	if errors.Is(err, zk.ErrNoNode) {
		if i := strings.LastIndexByte(path, '/'); i > 0 {
			if err := c.EnsurePath(path[:i]); err != nil {
				return "", err
			}
		}
		p, err = c.Create(path, data, flags)
	}
	return p, err
}

// DeleteRecursive removes path and everything under it; a missing path is
// not an error.
func (c *Client) DeleteRecursive(path string) error {
	children, _, err := c.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ch := range children {
		if err := c.DeleteRecursive(path + "/" + ch); err != nil {
			return err
		}
	}
	if err := c.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// SetChecked writes path at version only if checkPath is still at
// checkVersion, atomically (a multi-op): the controller's writes are
// conditional on /controller_epoch. checkFailed reports that the check
// failed (the other node moved), as opposed to the write's own version.
func (c *Client) SetChecked(checkPath string, checkVersion int32, path string, data []byte, version int32) (stat *zk.Stat, checkFailed bool, err error) {
	res, err := c.conn.Multi(
		&zk.CheckVersionRequest{Path: c.abs(checkPath), Version: checkVersion},
		&zk.SetDataRequest{Path: c.abs(path), Data: data, Version: version},
	)
	if err != nil {
		if len(res) == 2 && checkFailed0(res[0].Error) {
			return nil, true, res[0].Error
		}
		return nil, false, err
	}
	return res[1].Stat, false, nil
}

// CreateChecked creates path (persistent) only if checkPath is still at
// checkVersion, atomically.
func (c *Client) CreateChecked(checkPath string, checkVersion int32, path string, data []byte) (checkFailed bool, err error) {
	res, err := c.conn.Multi(
		&zk.CheckVersionRequest{Path: c.abs(checkPath), Version: checkVersion},
		&zk.CreateRequest{Path: c.abs(path), Data: data, Acl: zk.WorldACL(zk.PermAll)},
	)
	if err != nil {
		if len(res) == 2 && checkFailed0(res[0].Error) {
			return true, res[0].Error
		}
		return false, err
	}
	return false, nil
}

// checkFailed0 reports whether a multi's version check itself failed (the
// other operations of a failed multi report a runtime inconsistency).
func checkFailed0(err error) bool {
	return errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode)
}

// CreateAndSet atomically creates createPath (flags as Create) and writes
// setPath at setVersion: how a controller registers itself and bumps
// /controller_epoch in one step. It returns setPath's new stat; the error
// is the failing operation's (zk.ErrNodeExists: someone else is
// controller; zk.ErrBadVersion: someone else bumped the epoch).
func (c *Client) CreateAndSet(createPath string, createData []byte, flags int32, setPath string, setData []byte, setVersion int32) (*zk.Stat, error) {
	res, err := c.conn.Multi(
		&zk.CreateRequest{Path: c.abs(createPath), Data: createData, Acl: zk.WorldACL(zk.PermAll), Flags: flags},
		&zk.SetDataRequest{Path: c.abs(setPath), Data: setData, Version: setVersion},
	)
	if err != nil {
		return nil, err
	}
	return res[1].Stat, nil
}
