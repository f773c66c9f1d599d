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
