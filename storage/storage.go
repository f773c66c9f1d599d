// Package storage holds partition logs on disk in Apache Kafka's layout.
//
// A log dir (one entry of log.dirs) is a [Dir]: it holds one directory per
// partition named "<topic>-<partition>", Kafka's text checkpoint files
// (recovery-point-offset-checkpoint, log-start-offset-checkpoint,
// replication-offset-checkpoint, cleaner-offset-checkpoint), a ".lock" file held with flock while the
// dir is open, ".kafka_cleanshutdown" while it is closed cleanly, and
// Kafka's "meta.properties" naming the node and cluster it belongs to
// (EnsureMetaProperties). Partition data is never deleted outright: a
// removed log is renamed "<topic>-<partition>.<id>-delete" and deleted after
// file.delete.delay.ms; a log no metadata owns can be renamed "-stray" and
// kept (Dir.MarkStray). A failed fsync, or a failed write that could not be
// undone, takes the dir offline (ErrLogDirOffline) until restart.
//
// A partition directory is a [Log]: a sequence of segments, each a
// "<20-digit base offset>.log" file of v2 record batches with a sparse offset
// index (".index"), a time index (".timeindex") and, for a segment holding
// ABORT markers, Kafka's transaction index (".txnindex"), plus a
// "leader-epoch-checkpoint", Kafka's "partition.metadata" and producer-state
// snapshots ("<offset>.snapshot", Kafka's format). Every file is in Kafka's
// format, so a log dir moves between Kafka and kbroker both ways. Offsets in a log are dense and increasing; every
// batch on disk between the log start offset and the log end offset passed
// validation on append or on recovery, so reads never return a corrupt batch.
//
// Lock order: Dir.mu, then Log.cleanMu, then Log.flushMu, then Log.mu.
package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kbroker/kbroker/storage/vfs"
)

// ErrOffsetOutOfRange reports a read or lookup at an offset below the log
// start offset or above the log end offset (Kafka's OFFSET_OUT_OF_RANGE).
var ErrOffsetOutOfRange = errors.New("offset out of range")

// ErrLocked reports that another process (or another open Dir) holds the
// lock of a log dir.
var ErrLocked = errors.New("log dir is locked by another process")

// ErrClosed reports an operation on a closed or deleted log.
var ErrClosed = errors.New("log is closed")

// ErrExists reports creating a partition log that already exists.
var ErrExists = errors.New("partition log already exists")

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String is Kafka's directory name for the partition, "<topic>-<partition>".
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// ParseTopicPartition parses a partition directory name, splitting at the
// last '-' since topic names may contain '-'.
func ParseTopicPartition(name string) (TopicPartition, error) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, fmt.Errorf("partition dir name %q: want <topic>-<partition>", name)
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return TopicPartition{}, fmt.Errorf("partition dir name %q: bad partition number", name)
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, nil
}

// Kafka defaults for Config fields.
const (
	DefaultSegmentBytes       = 1 << 30         // log.segment.bytes
	DefaultSegmentMs          = 7 * 24 * 3600e3 // log.roll.ms (log.roll.hours=168)
	DefaultIndexIntervalBytes = 4096            // log.index.interval.bytes
)

// Config configures one partition log. Zero values mean Kafka's defaults.
type Config struct {
	// SegmentBytes is log.segment.bytes: the active segment rolls before an
	// append would make it larger. At most math.MaxInt32, since index
	// positions are int32.
	SegmentBytes int64
	// SegmentMs is log.roll.ms: a non-empty active segment rolls once this
	// long has passed since its first append.
	SegmentMs int64
	// IndexIntervalBytes is log.index.interval.bytes: an index entry is
	// added once more than this many bytes were appended since the last one.
	IndexIntervalBytes int32
	// FlushIntervalMessages is log.flush.interval.messages: Append fsyncs
	// once this many records are unflushed. Default math.MaxInt64 (never).
	FlushIntervalMessages int64
	// FlushIntervalMs is log.flush.interval.ms: the Dir's flusher fsyncs a
	// log whose oldest unflushed append is older. Default math.MaxInt64.
	FlushIntervalMs int64
	// FileDeleteDelayMs is the topic's file.delete.delay.ms: how long a
	// segment leaving a log in a Dir stays renamed DeletedFileSuffix
	// before the Dir deletes it. 0 is the Dir's FileDeleteDelayMs (Kafka's
	// 0 is expressed as 1).
	FileDeleteDelayMs int64
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives recovery and error reports; default slog.Default().
	Logger *slog.Logger
	// WriteFault, if set, is consulted before every segment write of n bytes
	// to path: a non-nil error makes only the first written bytes (at most n)
	// reach the file and the write fail with that error, as a full disk or an
	// I/O error would. A test hook; nil in production.
	WriteFault func(path string, n int) (written int, err error)
	// FS is the file system the log lives on; default vfs.Default, the
	// operating system's files. Tests use vfs.NewMem and vfs.WithErrors.
	FS vfs.FS

	// files is the log dir's cache of segment descriptors; Open makes a
	// private one if nil.
	files *fileCache

	// syncFault and truncateFault, if set, are consulted before the fsync
	// of a segment and before the truncation that undoes a failed write; a
	// non-nil error fails that step. Test hooks.
	syncFault     func(path string) error
	truncateFault func(path string) error
	// writeErrorsOffline is the dir's WriteErrorsOffline: a failed segment
	// write takes the log offline even when it was truncated back.
	writeErrorsOffline bool
	// closeSyncsFS: the log's Dir closes its logs without an fsync each
	// and then syncs the whole file system (Dir.Close), so a snapshot
	// written at shutdown need not be fsynced on its own
	// (WriteProducerSnapshotAtClose).
	closeSyncsFS bool
}

// withDefaults returns c with zero fields replaced by Kafka defaults, or an
// error for values Kafka would reject.
func (c Config) withDefaults() (Config, error) {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentMs == 0 {
		c.SegmentMs = DefaultSegmentMs
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.FlushIntervalMessages == 0 {
		c.FlushIntervalMessages = math.MaxInt64
	}
	if c.FlushIntervalMs == 0 {
		c.FlushIntervalMs = math.MaxInt64
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.files == nil {
		c.files = newFileCache(c.FS, 0)
	}
	switch {
	case c.SegmentBytes < 14 || c.SegmentBytes > math.MaxInt32:
		return c, fmt.Errorf("segment bytes %d: want 14..%d", c.SegmentBytes, math.MaxInt32)
	case c.SegmentMs < 1:
		return c, fmt.Errorf("segment ms %d: want >= 1", c.SegmentMs)
	case c.IndexIntervalBytes < 0:
		return c, fmt.Errorf("index interval bytes %d: want >= 0", c.IndexIntervalBytes)
	case c.FlushIntervalMessages < 1:
		return c, fmt.Errorf("flush interval messages %d: want >= 1", c.FlushIntervalMessages)
	case c.FlushIntervalMs < 0:
		return c, fmt.Errorf("flush interval ms %d: want >= 0", c.FlushIntervalMs)
	case c.FileDeleteDelayMs < 0:
		return c, fmt.Errorf("file delete delay ms %d: want >= 0", c.FileDeleteDelayMs)
	}
	return c, nil
}
