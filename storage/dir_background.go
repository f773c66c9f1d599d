package storage

import (
	"errors"
	"maps"
	"math"
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
// that rolled and of logs whose FlushIntervalMs elapsed, writes the recovery-point checkpoints every
// FlushOffsetCheckpointIntervalMs, and deletes "-delete" directories whose
// delay passed.
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
		d.flushStale()
		if now := d.cfg.Now(); !now.Before(nextCheckpoint) {
			d.checkpointRecoveryPoints()
			nextCheckpoint = now.Add(time.Duration(d.cfg.FlushOffsetCheckpointIntervalMs) * time.Millisecond)
		}
		d.deleteDue()
		if h := testHookPass; h != nil {
			h()
		}
	}
}

// sleep is how long the background goroutine may wait before its next
// pass: until the next flush tick, checkpoint or delete, within
// [1ms, maxBackgroundTick].
func (d *Dir) sleep(nextCheckpoint time.Time) time.Duration {
	now := d.cfg.Now()
	wait := nextCheckpoint.Sub(now)
	if t := d.flushTick(); t > 0 {
		wait = min(wait, t)
	}
	d.mu.Lock()
	for _, p := range d.mu.deletes {
		wait = min(wait, p.due.Sub(now))
	}
	d.mu.Unlock()
	return min(max(wait, time.Millisecond), maxBackgroundTick)
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

// flushTick is the flusher's period: the smallest finite FlushIntervalMs of
// the open logs, clamped to [1ms, maxBackgroundTick]; zero if no log has one.
func (d *Dir) flushTick() time.Duration {
	tick := time.Duration(0)
	for _, l := range d.Logs() {
		ms := l.config().FlushIntervalMs
		if ms == math.MaxInt64 {
			continue
		}
		t := min(max(time.Duration(ms)*time.Millisecond, time.Millisecond), maxBackgroundTick)
		if tick == 0 || t < tick {
			tick = t
		}
	}
	return tick
}

// flushStale fsyncs every log whose oldest unflushed append is at least its
// FlushIntervalMs old, then checkpoints the recovery points if any was.
func (d *Dir) flushStale() {
	flushed := false
	for tp, l := range d.Logs() {
		cfg := l.config()
		ms := cfg.FlushIntervalMs
		since := l.unflushedSince()
		if ms == math.MaxInt64 || since.IsZero() || cfg.Now().Sub(since) < time.Duration(ms)*time.Millisecond {
			continue
		}
		if l.Offline() != nil {
			continue // its unflushed data can never be made durable
		}
		if err := l.Flush(); err != nil {
			if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrLogDirOffline) {
				d.logger.Error("background flush failed", "partition", tp.String(), "err", err)
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
