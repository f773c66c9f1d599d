package broker

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
func (b *Manager) noteAppend(p *partition, err error) {
	if err == nil {
		if p.appendFailing.CompareAndSwap(true, false) {
			b.log.Info("appends succeed again", "topic", p.topic.meta.Name, "partition", p.index)
		}
		return
	}
	if p.appendFailing.CompareAndSwap(false, true) {
		b.log.Error("append failed; further failures of this partition are not logged until one succeeds",
			"topic", p.topic.meta.Name, "partition", p.index, "disk_full", errors.Is(err, syscall.ENOSPC), "err", err)
	}
}
