// Command kbroker runs a Kafka-compatible broker:
//
//	kbroker [server.properties] [--override key=value]...
//
// the same shape as kafka-server-start.sh. With no arguments it serves
// PLAINTEXT on 127.0.0.1:9092 with its data under config.DefaultLogDir().
// SIGTERM or SIGINT stops it gracefully: in cluster mode (zookeeper.connect)
// it first asks the controller to move its leaderships away (controlled
// shutdown); then listeners close, in-flight requests finish, every log is
// flushed and closed, and it exits 0.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/broker/config"
)

func main() {
	if err := run(os.Args[1:], os.Environ()); err != nil {
		// The logger may not exist yet (the error is in the config).
		slog.New(slog.NewTextHandler(os.Stderr, nil)).Error("kbroker failed", "err", err)
		os.Exit(1)
	}
}

const usage = "usage: kbroker [server.properties] [--env-config] [--override key=value]..."

// envConfigVar, set to true, reads KAFKA_* variables as --env-config does
// (for images whose entrypoint cannot take flags).
const envConfigVar = "KBROKER_ENV_CONFIG"

// parseArgs returns the merged properties: the file first, then (with
// --env-config, or KBROKER_ENV_CONFIG=true in environ) the KAFKA_*
// environment variables as the apache/kafka image maps them (env.go), then
// the overrides on top. The environment is read only when asked for: a
// developer's shell may hold KAFKA_* variables meant for other tools.
func parseArgs(args []string, environ ...string) (map[string]string, error) {
	p := map[string]string{}
	var overrides [][2]string
	useEnv := false
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, envConfigVar+"="); ok && strings.EqualFold(v, "true") {
			useEnv = true
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-h" || a == "--help":
			return nil, errors.New(usage)
		case a == "--env-config" || a == "-env-config":
			useEnv = true
		case a == "--override" || a == "-override":
			if i+1 == len(args) {
				return nil, fmt.Errorf("--override needs key=value\n%s", usage)
			}
			i++
			k, v, ok := strings.Cut(args[i], "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--override %q is not key=value", args[i])
			}
			overrides = append(overrides, [2]string{strings.TrimSpace(k), v})
		case strings.HasPrefix(a, "--override="):
			k, v, ok := strings.Cut(strings.TrimPrefix(a, "--override="), "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("%q is not --override=key=value", a)
			}
			overrides = append(overrides, [2]string{strings.TrimSpace(k), v})
		case strings.HasPrefix(a, "-"):
			return nil, fmt.Errorf("unknown flag %q\n%s", a, usage)
		default:
			f, err := os.Open(a)
			if err != nil {
				return nil, fmt.Errorf("reading config file: %w", err)
			}
			fp, err := parseProperties(f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", a, err)
			}
			for k, v := range fp {
				p[k] = v
			}
		}
	}
	if useEnv {
		for k, v := range envProperties(environ) {
			p[k] = v
		}
	}
	for _, kv := range overrides {
		p[kv[0]] = kv[1]
	}
	return p, nil
}

func run(args, environ []string) error {
	p, err := parseArgs(args, environ...)
	if err != nil {
		return err
	}
	if err := setProfileRates(environ); err != nil { // profiling.go
		return err
	}
	cfg, unknown, err := config.ParseConfig(p)
	if err != nil {
		return err
	}
	// log.level and log.format come from the config, so the logger is
	// built only now; its level can change later (a dynamic log.level).
	logger, level := cfg.Logging.NewLogger(os.Stderr)
	cfg.Logging.LevelVar = level
	for _, k := range unknown {
		logger.Warn("ignoring unknown config key", "key", k)
	}
	cfg.Logger = logger
	b, err := broker.New(cfg)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	if err := b.Start(); err != nil {
		return err
	}
	logger.Info("kbroker started", "node.id", cfg.NodeID, "log.dirs", strings.Join(cfg.LogDirs, ","))
	sig := <-sigs
	logger.Info("shutting down", "signal", sig.String())
	// Cluster mode: move leadership off this broker first, so clients see
	// no errors on a rolling restart; a second signal skips the wait.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := b.ControlledShutdown(ctx); err != nil {
		logger.Warn("stopping without a controlled shutdown", "err", err)
	}
	cancel()
	return b.Close()
}
