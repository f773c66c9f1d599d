//go:build faultfs

package main

// The disk-fault hook of the integration tests' kbroker, compiled only
// with -tags faultfs (integration/brokers.go builds its binary so; release
// builds and images never are). With KBROKER_FAULTFS set to the path of a
// control file, every log dir lives on vfs.WithErrors over the operating
// system's files, and the fault injected is what the control file says:
//
//	ok             no fault (also an empty or missing file)
//	slow <dur>     every write and fsync first sleeps <dur> (a Go duration)
//	full           writes, fsyncs and mkdirs fail with ENOSPC (a full disk)
//	eio            writes and fsyncs fail with EIO (a failing disk)
//	full|eio <dir> the same, only for paths under <dir> (one log dir of
//	               several failing, the others healthy)
//
// The file is read at start and again on each SIGUSR1; once a mode is in
// force the hook writes it to <control>.applied (temp file and rename), so
// the test waits on that file rather than on time. Without KBROKER_FAULTFS
// the binary is the plain broker and SIGUSR1 keeps its default action.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/storage/vfs"
)

// faultFSEnv names the control file of the disk-fault hook.
const faultFSEnv = "KBROKER_FAULTFS"

func newBroker(cfg config.Config) (*broker.Broker, error) {
	path := os.Getenv(faultFSEnv)
	if path == "" {
		return broker.New(cfg)
	}
	var inj vfs.Switchable
	log := cfg.Logger.With("faultfs", path)
	if err := applyFaultFile(path, &inj, log); err != nil {
		return nil, err
	}
	// The goroutine lives as long as the process: the test owns the
	// process, and signal.Notify's channel needs a reader until exit.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			if err := applyFaultFile(path, &inj, log); err != nil {
				log.Error("disk fault not changed", "err", err)
			}
		}
	}()
	return broker.NewWithFS(cfg, vfs.WithErrors(vfs.Default, inj.Inject))
}

// applyFaultFile reads the control file at path, sets inj to its fault
// and acknowledges it in path + ".applied".
func applyFaultFile(path string, inj *vfs.Switchable, log *slog.Logger) error {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("reading the disk-fault control file: %w", err)
	}
	mode := strings.TrimSpace(string(data))
	f, err := parseFault(mode)
	if err != nil {
		return fmt.Errorf("disk-fault control file %s: %w", path, err)
	}
	inj.Set(f)
	level := slog.LevelWarn
	if f == nil {
		level = slog.LevelInfo
	}
	log.Log(context.Background(), level, "disk fault in force (test hook)", "mode", mode)
	tmp := path + ".applied.tmp"
	if err := os.WriteFile(tmp, []byte(mode), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path+".applied")
}

// parseFault turns a control line into an injector (nil: no fault).
func parseFault(mode string) (vfs.Injector, error) {
	fields := strings.Fields(mode)
	if len(fields) == 0 || fields[0] == "ok" {
		return nil, nil
	}
	under := ""
	if len(fields) == 2 && (fields[0] == "full" || fields[0] == "eio") {
		under = strings.TrimSuffix(fields[1], "/") + "/"
	}
	fail := func(err error, kinds ...vfs.OpKind) vfs.Injector {
		return func(op vfs.Op) error {
			if under != "" && !strings.HasPrefix(op.Path+"/", under) {
				return nil
			}
			for _, k := range kinds {
				if op.Kind == k {
					return err
				}
			}
			return nil
		}
	}
	switch {
	case fields[0] == "slow" && len(fields) == 2:
		d, err := time.ParseDuration(fields[1])
		if err != nil || d < 0 {
			return nil, fmt.Errorf("slow %q: not a duration", fields[1])
		}
		return func(op vfs.Op) error {
			if op.Kind == vfs.OpWrite || op.Kind == vfs.OpSync {
				time.Sleep(d)
			}
			return nil
		}, nil
	case fields[0] == "full" && len(fields) <= 2:
		return fail(syscall.ENOSPC, vfs.OpWrite, vfs.OpSync, vfs.OpMkdir), nil
	case fields[0] == "eio" && len(fields) <= 2:
		return fail(syscall.EIO, vfs.OpWrite, vfs.OpSync), nil
	}
	return nil, fmt.Errorf("unknown disk fault %q (ok, slow <duration>, full [dir], eio [dir])", mode)
}
