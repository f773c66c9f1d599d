// Package httpserver is the broker's own HTTP listener (http.listeners):
// /metrics (Prometheus), /healthz (the process answers), /readyz (the broker
// serves Kafka clients), with http.pprof.enable /debug/pprof/, and the web
// console (broker/console) at every other path. It knows
// no broker room: what it serves is handed to it (Config).
package httpserver

import (
	"context"
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
	Logger  *slog.Logger
}

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
		Handler:           s.mux(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	return s
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
		ln, err := net.Listen("tcp", l.Addr())
		if err != nil {
			return fmt.Errorf("listening on %s: %w", l, err)
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
