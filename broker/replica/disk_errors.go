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
//
// A dir that goes while others remain is queued on FailedDirs: in cluster
// mode the broker stops the replicas it held (StopDirReplicas) and tells
// the controller through /log_dir_event_notification, as Kafka's
// ReplicaManager.handleLogDirFailure.
func (m *Manager) dirOffline(path string) {
	if int(m.offlineDirs.Add(1)) == len(m.cfg.LogDirs) {
		close(m.dirsFailed)
		return
	}
	select {
	case m.failedDirs <- path: // room for every dir: each goes offline once
	default:
	}
}

// FailedDirs yields the path of each log dir that went offline while other
// dirs of the broker remain.
func (m *Manager) FailedDirs() <-chan string { return m.failedDirs }

// StopDirReplicas stops fetching for and leading every partition whose log
// is in the log dir at path, keeping the logs (their appends are refused
// already), and returns how many it stopped.
func (m *Manager) StopDirReplicas(path string) int {
	var in []*Partition
	m.mu.RLock()
	for _, t := range m.mu.topics {
		for _, p := range t.Partitions {
			if p != nil && p.Dir != nil && p.Dir.Path() == path {
				in = append(in, p)
			}
		}
	}
	m.mu.RUnlock()
	n := 0
	for _, p := range in {
		if err := m.StopReplica(p.Topic.Meta.Name, p.Index, false); err != nil {
			m.log.Warn("stopping a replica of an offline log dir", "dir", path, "topic", p.Topic.Meta.Name, "partition", p.Index, "err", err)
			continue
		}
		n++
	}
	return n
}

// DirsFailed is closed once every log dir of the broker is offline (a
// failed fsync, or in cluster mode any failed write). Offline dirs come
// back only with a restart, as in Kafka.
func (m *Manager) DirsFailed() <-chan struct{} { return m.dirsFailed }
