package storage

import (
	"errors"
	"maps"
	"time"
)

// maxBackgroundTick bounds the background goroutine's sleep, so that a
// changed clock or config is noticed within it.
const maxBackgroundTick = time.Second

// testHookPass, if set before OpenDir, runs after each pass of the
// background goroutine.
var testHookPass func()

// poke makes the background goroutine run a pass soon.
func (d *Dir) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run is the background goroutine: each pass fsyncs the segments of logs
// that rolled, the deferred producer snapshots, and the logs whose
// FlushIntervalMs elapsed, writes the recovery-point checkpoints every
// FlushOffsetCheckpointIntervalMs, and deletes the "-delete" directories
// and retired segment files whose delay passed. Snapshots still unsynced
// at Close are covered by its sync of the file system, or superseded by
// the snapshot each partition writes at shutdown; retired files left at
// Close are deleted by the next Open of their log.
func (d *Dir) run() {
	defer close(d.done)
	nextCheckpoint := d.cfg.Now().Add(time.Duration(d.cfg.FlushOffsetCheckpointIntervalMs) * time.Millisecond)
	for {
		timer := time.NewTimer(d.sleep(nextCheckpoint))
		select {
		case <-d.stop:
			timer.Stop()
			return
		case <-d.wake:
			timer.Stop()
		case <-timer.C:
		}
		d.flushRolled()
		d.syncSnapshots()
		d.flushStale()
		if now := d.cfg.Now(); !now.Before(nextCheckpoint) {
			d.checkpointRecoveryPoints()
			nextCheckpoint = now.Add(time.Duration(d.cfg.FlushOffsetCheckpointIntervalMs) * time.Millisecond)
		}
		d.deleteDue()
		d.deleteRetired()
		if h := testHookPass; h != nil {
			h()
		}
	}
}

// sleep is how long the background goroutine may wait before its next
// pass: until the first timed flush, checkpoint or delete is due, within
// [1ms, maxBackgroundTick].
func (d *Dir) sleep(nextCheckpoint time.Time) time.Duration {
	now := d.cfg.Now()
	wait := nextCheckpoint.Sub(now)
	d.mu.Lock()
	defer d.mu.Unlock()
	for l := range d.mu.unflushed {
		if due, ok := l.flushDueIn(); ok {
			wait = min(wait, due)
		} else {
			// Flushed (or its interval dropped) since it joined; an
			// append that starts a new run adds it again, after this
			// check under d.mu, so it cannot be missed.
			delete(d.mu.unflushed, l)
		}
	}
	for _, p := range d.mu.deletes {
		wait = min(wait, p.due.Sub(now))
	}
	d.retired.Lock()
	for _, f := range d.retired.files {
		wait = min(wait, f.due.Sub(now))
	}
	d.retired.Unlock()
	wait = min(max(wait, time.Millisecond), maxBackgroundTick)
	d.mu.nextPass = now.Add(wait)
	return wait
}

// watchUnflushed is each log's onUnflushed hook: l holds unflushed
// records and is due a flush within after. The flusher watches it from
// now on, and runs a pass sooner if it was to sleep past that.
func (d *Dir) watchUnflushed(l *Log, after time.Duration) {
	d.mu.Lock()
	if d.mu.unflushed == nil {
		d.mu.unflushed = map[*Log]struct{}{}
	}
	d.mu.unflushed[l] = struct{}{}
	wake := d.cfg.Now().Add(after).Before(d.mu.nextPass)
	d.mu.Unlock()
	if wake {
		d.poke()
	}
}

// flushRolled fsyncs the segments of logs that rolled since the last
// pass, advancing their recovery points to the new active segments.
func (d *Dir) flushRolled() {
	d.mu.Lock()
	todo := d.mu.rollFlushes
	d.mu.rollFlushes = nil
	d.mu.Unlock()
	for l, upTo := range todo {
		// An offline log reported its failure once, when it happened.
		if err := l.flushTo(upTo); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrLogDirOffline) {
			d.logger.Error("fsync after segment roll failed", "log", l.Dir(), "err", err)
		}
	}
}

// syncSnapshots fsyncs the deferred producer snapshots of the logs that
// wrote one since the last pass and removes the older ones they replace.
// A failure is logged: the older snapshots stay, and the next snapshot of
// the log tries again.
func (d *Dir) syncSnapshots() {
	d.mu.Lock()
	todo := d.mu.snapshotSyncs
	d.mu.snapshotSyncs = nil
	d.mu.Unlock()
	for l := range todo {
		if err := l.syncDeferredSnapshots(); err != nil {
			d.logger.Warn("producer snapshot not made durable; the older ones are kept", "log", l.Dir(), "err", err)
		}
	}
}

// flushStale fsyncs every log whose oldest unflushed append is at least its
// FlushIntervalMs old, then checkpoints the recovery points if any was.
// Only the watched logs (d.mu.unflushed) can be due: the others have no
// unflushed record or no flush interval.
func (d *Dir) flushStale() {
	d.mu.Lock()
	var due []*Log
	for l := range d.mu.unflushed {
		if in, ok := l.flushDueIn(); ok && in <= 0 {
			due = append(due, l)
		}
	}
	d.mu.Unlock()
	flushed := false
	for _, l := range due {
		if l.Offline() != nil {
			d.unwatch(l) // its unflushed data can never be made durable
			continue
		}
		if err := l.Flush(); err != nil {
			switch {
			case errors.Is(err, ErrClosed) || errors.Is(err, ErrLogDirOffline):
				d.unwatch(l)
			default:
				d.logger.Error("background flush failed", "log", l.Dir(), "err", err)
			}
			continue
		}
		flushed = true
	}
	if flushed {
		if err := d.Checkpoint(); err != nil {
			d.logger.Error("checkpoint after flush failed", "err", err)
		}
	}
}

// unwatch stops the flusher's watch of l, a log closed or offline.
func (d *Dir) unwatch(l *Log) {
	d.mu.Lock()
	delete(d.mu.unflushed, l)
	d.mu.Unlock()
}

// checkpointRecoveryPoints writes the dir's checkpoints if a recovery point
// moved since they were last written (Kafka's periodic
// checkpointLogRecoveryOffsets), so that recovery after a crash starts at
// the segments written since.
func (d *Dir) checkpointRecoveryPoints() {
	rp := map[TopicPartition]int64{}
	for tp, l := range d.Logs() {
		rp[tp] = l.RecoveryPoint()
	}
	d.mu.Lock()
	same := maps.Equal(rp, d.mu.lastRecovery)
	d.mu.Unlock()
	if same {
		return
	}
	if err := d.Checkpoint(); err != nil {
		d.logger.Error("periodic checkpoint of recovery points failed", "err", err)
	}
}
