package replica

import (
	"errors"
	"syscall"
)

// noteAppend logs storage trouble of a partition once per episode: the
// first failed append is logged as an error (the produce gets
// KAFKA_STORAGE_ERROR, see partition.append), later failures are not, and
// the first success after them is logged as a recovery. Reads of data
// already on disk are not affected by a failing append: storage.Log.Append
// removes whatever part of the batch reached the file.
func (m *Manager) noteAppend(p *Partition, err error) {
	if err == nil {
		if p.appendFailing.CompareAndSwap(true, false) {
			m.log.Info("appends succeed again", "topic", p.Topic.Meta.Name, "partition", p.Index)
		}
		return
	}
	if p.appendFailing.CompareAndSwap(false, true) {
		m.log.Error("append failed; further failures of this partition are not logged until one succeeds",
			"topic", p.Topic.Meta.Name, "partition", p.Index, "disk_full", errors.Is(err, syscall.ENOSPC), "err", err)
	}
}

// dirOffline is each log dir's storage.DirConfig.OnOffline (called once per
// dir): when the last live dir goes, dirsFailed is closed.
//
// In cluster mode any failed write takes its dir offline
// (WriteErrorsOffline), as Kafka's LogDirFailureChannel does, and a broker
// whose every dir is offline can serve no partition: Kafka's LogManager
// halts it ("all log dirs have failed"), its ZooKeeper session ends and
// the controller elects new leaders from the ISR. The broker root does the
// same with DirsFailed.
func (m *Manager) dirOffline(err error) {
	if int(m.offlineDirs.Add(1)) == len(m.cfg.LogDirs) {
		close(m.dirsFailed)
	}
}

// DirsFailed is closed once every log dir of the broker is offline (a
// failed fsync, or in cluster mode any failed write). Offline dirs come
// back only with a restart, as in Kafka.
func (m *Manager) DirsFailed() <-chan struct{} { return m.dirsFailed }
