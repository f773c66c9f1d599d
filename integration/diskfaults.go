package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// faultFSEnv names cmd/kbroker's disk-fault hook (cmd/kbroker/faultfs.go,
// compiled in with -tags faultfs, as buildKbroker builds): the path of a
// control file whose line ("ok", "slow <duration>", "full", "eio") is the
// fault the broker's log dirs suffer, re-read on SIGUSR1 and acknowledged
// in <control>.applied.
const faultFSEnv = "KBROKER_FAULTFS"

// faultFile is the broker's disk-fault control file; it lives beside the
// log dir, on the real disk, and survives restarts.
func (b *BrokerProc) faultFile() string { return filepath.Join(b.Dir, "faultfs") }

// SetDisk switches the disk fault of a broker started with FaultFS (see
// faultFSEnv for the modes). The mode is kept for later restarts. A running
// broker is told with SIGUSR1, and SetDisk returns once it acknowledged the
// mode, or once it exited (a broker whose every log dir failed halts, as
// Kafka's does, possibly before acknowledging).
func (b *BrokerProc) SetDisk(mode string) error {
	if !b.FaultFS {
		return fmt.Errorf("broker %d was started without the disk-fault hook", b.ID)
	}
	if err := os.WriteFile(b.faultFile(), []byte(mode), 0o644); err != nil {
		return err
	}
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.mu.Unlock()
	select {
	case <-exited:
		return nil
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return nil // it exited meanwhile
	}
	deadline := time.After(30 * time.Second)
	for {
		if got, err := os.ReadFile(b.faultFile() + ".applied"); err == nil && strings.TrimSpace(string(got)) == mode {
			return nil
		}
		select {
		case <-exited:
			return nil
		case <-deadline:
			return fmt.Errorf("broker %d did not acknowledge disk mode %q within 30s", b.ID, mode)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
