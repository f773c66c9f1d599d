// Package httpserver is the broker's own HTTP listener (http.listeners):
// /metrics (Prometheus), /healthz (the process answers), /readyz (the broker
// serves Kafka clients), with http.pprof.enable /debug/pprof/, and the web
// console (broker/console) at every other path. It knows
// no broker room: what it serves is handed to it (Config).
//
// Its https:// listeners serve Config.TLS; with Config.Auth (http.authentication=basic)
// every path but /healthz and /readyz needs an HTTP Basic login of one of
// the broker's SASL users (auth.go). The probes stay open because a
// kubelet or load balancer has no credentials and learns nothing from them
// but "up" and "ready".
package httpserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/config"
)

// Config is what the server serves.
type Config struct {
	Listeners []config.HTTPListener
	// Pprof serves /debug/pprof/ (http.pprof.enable).
	Pprof bool
	// Metrics serves /metrics; nil: 404.
	Metrics http.Handler
	// Ready reports why the broker is not ready (nil: ready); /readyz
	// answers 503 with that reason until it is. nil: always ready.
	Ready func() error
	// Console serves every path the others do not (the web console); nil:
	// 404.
	Console http.Handler
	// TLS is the configuration of the https:// listeners (Listeners with
	// TLS set); Start fails without it when there is one.
	TLS *tls.Config
	// Auth, when set, guards every path but /healthz and /readyz
	// (http.authentication=basic); nil: no authentication.
	Auth *BasicAuth
	// Exposure, when set, replaces the warning of a listener beyond
	// loopback: it returns the warning to log ("" for none), given whether
	// the listener is https. The REST proxy, which logs its users in
	// itself, sets it.
	Exposure func(https bool) string
	Logger   *slog.Logger
}

// openPaths are served without a login: the probes.
var openPaths = map[string]bool{"/healthz": true, "/readyz": true}

// shutdownGrace bounds how long Close waits for requests in flight (a
// scrape, a profile) before closing their connections.
const shutdownGrace = 2 * time.Second

// Server serves Config on every listener. Start it with Start, stop it with
// Close.
type Server struct {
	cfg Config
	log *slog.Logger
	srv *http.Server

	mu        sync.Mutex
	listeners []net.Listener
	wg        sync.WaitGroup // one Serve per listener
	closeOnce sync.Once
}

// New returns a server that has not bound its listeners yet.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	s.srv = &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	return s
}

// handler is the mux, behind the login when Auth is set. The probes are
// exempt by their exact path; any other path, unknown ones included, asks
// for the login first, so that nothing is learnt about the server without
// it.
func (s *Server) handler() http.Handler {
	mux := s.mux()
	if s.cfg.Auth == nil {
		return mux
	}
	guarded := s.cfg.Auth.wrap(mux, s.log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openPaths[r.URL.Path] {
			mux.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

func (s *Server) mux() *http.ServeMux {
	mux := http.NewServeMux()
	if s.cfg.Metrics != nil {
		mux.Handle("GET /metrics", s.cfg.Metrics)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if s.cfg.Ready != nil {
			if err := s.cfg.Ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintln(w, "not ready:", err)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	if s.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if s.cfg.Console != nil {
		mux.Handle("/", s.cfg.Console)
	}
	return mux
}

// Start binds every listener and serves until Close. On an error the
// listeners already bound stay open until Close.
func (s *Server) Start() error {
	for _, l := range s.cfg.Listeners {
		if l.TLS && s.cfg.TLS == nil {
			return fmt.Errorf("listener %s: no TLS configuration", l)
		}
		ln, err := net.Listen("tcp", l.Addr())
		if err != nil {
			return fmt.Errorf("listening on %s: %w", l, err)
		}
		s.warnExposed(l, ln.Addr())
		if l.TLS {
			// The handshake runs in the connection's goroutine, bounded
			// by ReadHeaderTimeout (net/http's TLS handshake timeout).
			ln = tls.NewListener(ln, s.cfg.TLS)
		}
		s.mu.Lock()
		s.listeners = append(s.listeners, ln)
		s.mu.Unlock()
		s.log.Info("http listening", "listener", l.String(), "addr", ln.Addr().String())
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("http listener stopped", "addr", ln.Addr().String(), "err", err)
			}
		}()
	}
	return nil
}

// warnExposed logs a listener that serves beyond loopback without a login,
// or with passwords in clear text.
func (s *Server) warnExposed(l config.HTTPListener, addr net.Addr) {
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return
	}
	if s.cfg.Exposure != nil {
		if msg := s.cfg.Exposure(l.TLS); msg != "" {
			s.log.Warn(msg, "listener", l.String())
		}
		return
	}
	switch {
	case s.cfg.Auth == nil:
		s.log.Warn("http listener is not loopback and http.authentication=none: whoever reaches it reads the metrics and uses the console; set http.authentication=basic", "listener", l.String())
	case !l.TLS:
		s.log.Warn("http listener is not loopback and not https: Basic logins cross the network in clear text; use https://", "listener", l.String())
	}
}

// Addrs returns the bound addresses (useful with port 0).
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]net.Addr, 0, len(s.listeners))
	for _, ln := range s.listeners {
		out = append(out, ln.Addr())
	}
	return out
}

// Close stops the listeners, lets requests in flight finish for up to
// shutdownGrace, then closes every connection and waits for the serve
// loops. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			s.srv.Close()
		}
		s.mu.Lock()
		for _, ln := range s.listeners {
			ln.Close() // bound but never served (Start failed on a later one)
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
}
