package storage

import (
	"os"

	"github.com/kbroker/kbroker/storage/vfs"
)

// Writeback pacing. Appends land in the page cache; the kernel writes dirty
// pages back when they are 30 s old or when too many are dirty, and then
// throttles whichever writer it finds (balance_dirty_pages), a stall of
// hundreds of milliseconds for an append that holds its partition. A
// segment is also fsynced before it rolls (Log.rollLocked): with 1 GiB
// segments that fsync, on the append path, can find hundreds of MB still
// dirty. So each dir starts the writeback of every SegmentWritebackBytes a
// partition appends, behind the writer and off the append path
// (sync_file_range(SYNC_FILE_RANGE_WRITE) on Linux, which starts the I/O and
// does not wait for it): dirty pages stay few, and the fsync at a roll finds
// little left to write. Nothing here changes durability: only fsync counts.

// DefaultSegmentWritebackBytes is the default of log.segment.writeback.bytes.
const DefaultSegmentWritebackBytes = 8 << 20

// writebackJob is a byte range of a segment's log file to write back.
type writebackJob struct {
	f      *segFile
	off, n int64
}

// writebackQueue bounds the jobs waiting for the dir's writeback goroutine;
// a job that finds the queue full is dropped (the kernel writes the pages
// back anyway).
const writebackQueue = 256

// queueWriteback hands a range to the writeback goroutine without waiting.
func (d *Dir) queueWriteback(j writebackJob) {
	select {
	case d.writeback <- j:
	default:
	}
}

// writebackLoop starts the writeback of each queued range until stop. A
// segment closed meanwhile is skipped (acquire fails).
func (d *Dir) writebackLoop() {
	defer close(d.writebackDone)
	for {
		select {
		case <-d.stop:
			return
		case j := <-d.writeback:
			f, err := j.f.acquire()
			if err != nil {
				continue
			}
			if of, ok := vfs.AsOSFile(f); ok {
				startWriteback(of, j.off, j.n)
			}
			j.f.release()
		}
	}
}

// writebackPage is the page size: a writeback range ends at a page
// boundary.
var writebackPage = int64(os.Getpagesize())

// writebackDue is the range of s to write back after an append, if
// SegmentWritebackBytes were appended to it since the last range; it
// advances s.writebackFrom. The range stops before the page the writer is
// still filling: writing that page back locks it, and while the disk's
// queue is full the submission waits with the lock held, so the next
// append to the segment (under its partition's lock) would wait too (a
// 75 ms pwrite in a traced cluster run). Called under Log.mu.
func writebackDue(s *segment, every int64) (writebackJob, bool) {
	end := s.size &^ (writebackPage - 1)
	if every <= 0 || end-s.writebackFrom < every {
		return writebackJob{}, false
	}
	j := writebackJob{f: s.log, off: s.writebackFrom, n: end - s.writebackFrom}
	s.writebackFrom = end
	return j, true
}
