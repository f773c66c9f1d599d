package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Suffixes of partition directories that are not live logs, as Kafka's
// LocalLog: "<topic>-<partition>.<32 hex digits>-delete" waits for
// file.delete.delay.ms and is then deleted; "-stray" is a log no metadata
// knows, kept for an operator to inspect.
const (
	DeleteDirSuffix = "-delete"
	StrayDirSuffix  = "-stray"
)

// maxDirNameLen is the longest file name most file systems allow.
const maxDirNameLen = 255

// renamedDirName is Kafka's logDirNameWithSuffixCappedLength:
// "<topic>-<partition>.<uniqueId><suffix>", the topic cut short so that the
// name fits in 255 bytes.
func renamedDirName(tp TopicPartition, suffix string) string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	full := "-" + strconv.FormatInt(int64(tp.Partition), 10) + "." + hex.EncodeToString(id[:]) + suffix
	topic := tp.Topic
	if n := maxDirNameLen - len(full); len(topic) > n {
		topic = topic[:n]
	}
	return topic + full
}

// parseRenamedDirName reports whether name is a "-delete" or "-stray"
// directory name, and which suffix it has.
func parseRenamedDirName(name string) (suffix string, ok bool) {
	for _, suf := range []string{DeleteDirSuffix, StrayDirSuffix} {
		stem, found := strings.CutSuffix(name, suf)
		if !found {
			continue
		}
		dot := strings.LastIndexByte(stem, '.')
		if dot < 0 || dot == len(stem)-1 {
			return "", false
		}
		if _, err := ParseTopicPartition(stem[:dot]); err != nil {
			return "", false
		}
		return suf, true
	}
	return "", false
}

// pendingDelete is a "-delete" directory (its name in the log dir) or a
// retired segment file (its path), and when it may be deleted.
type pendingDelete struct {
	name string
	due  time.Time
}

// takeDue removes the entries due by now from *list and returns them.
func takeDue(list *[]pendingDelete, now time.Time) []pendingDelete {
	var due []pendingDelete
	keep := (*list)[:0]
	for _, p := range *list {
		if now.Before(p.due) {
			keep = append(keep, p)
		} else {
			due = append(due, p)
		}
	}
	*list = keep
	return due
}

// deleteRetired deletes the retired segment files whose delay has passed,
// in steps (removeInSteps). One that cannot be deleted is logged and
// retried after another delay.
func (d *Dir) deleteRetired() {
	d.retired.Lock()
	due := takeDue(&d.retired.files, d.cfg.Now())
	d.retired.Unlock()
	var failed []pendingDelete
	for _, f := range due {
		if err := removeInSteps(d.fs, f.name, deleteStepBytes); err != nil {
			d.logger.Error("deleting retired segment file failed; will retry", "file", f.name, "err", err)
			failed = append(failed, pendingDelete{name: f.name, due: d.deleteDue0()})
		}
	}
	if len(failed) > 0 {
		d.retired.Lock()
		d.retired.files = append(d.retired.files, failed...)
		d.retired.Unlock()
	}
}

// adoptRenamed takes note of a "-delete" or "-stray" directory found at
// OpenDir, so that it is not loaded as a log, and reports whether name was
// one. Leftover "-delete" directories get a full delay from now, as Kafka.
func (d *Dir) adoptRenamed(name string) bool {
	suf, ok := parseRenamedDirName(name)
	switch {
	case !ok:
		return false
	case suf == DeleteDirSuffix:
		d.logger.Info("scheduling deletion of a removed log", "dir", name, "delay_ms", d.cfg.FileDeleteDelayMs)
		d.mu.deletes = append(d.mu.deletes, pendingDelete{name: name, due: d.deleteDue0()})
	default:
		d.logger.Warn("keeping stray log directory: no topic in the metadata owns it; "+
			"inspect it, then delete it or move it back", "dir", name)
		d.mu.strays = append(d.mu.strays, name)
	}
	return true
}

// deleteDue0 is the time a directory renamed now may be deleted.
func (d *Dir) deleteDue0() time.Time {
	return d.cfg.Now().Add(time.Duration(d.cfg.FileDeleteDelayMs) * time.Millisecond)
}

// Remove closes tp's log and renames its directory
// "<topic>-<partition>.<id>-delete"; the background goroutine deletes it
// after FileDeleteDelayMs (Kafka's file.delete.delay.ms), and so does a
// later OpenDir if the process stops first. Readers still holding the log
// get ErrClosed. It is how DeleteTopics and the deletion of a whole log
// remove data: never outright, so that a mistake has a window to be noticed.
func (d *Dir) Remove(tp TopicPartition) error {
	name, err := d.renameOut(tp, DeleteDirSuffix, false)
	if err != nil {
		return fmt.Errorf("remove %s: %w", tp, err)
	}
	d.mu.Lock()
	d.mu.deletes = append(d.mu.deletes, pendingDelete{name: name, due: d.deleteDue0()})
	d.mu.Unlock()
	d.poke()
	d.logger.Info("log renamed for deletion", "partition", tp.String(), "dir", name, "delay_ms", d.cfg.FileDeleteDelayMs)
	return nil
}

// MarkStray flushes and closes tp's log and renames its directory
// "<topic>-<partition>.<id>-stray", where it stays, unloaded, until an
// operator deals with it. It returns the new directory name. A broker uses
// it for a log that no topic in its metadata owns, instead of deleting data
// it cannot account for.
func (d *Dir) MarkStray(tp TopicPartition) (string, error) {
	name, err := d.renameOut(tp, StrayDirSuffix, true)
	if err != nil {
		return "", fmt.Errorf("mark %s stray: %w", tp, err)
	}
	d.mu.Lock()
	d.mu.strays = append(d.mu.strays, name)
	d.mu.Unlock()
	d.logger.Warn("log marked stray and kept: no topic in the metadata owns it", "partition", tp.String(), "dir", name)
	return name, nil
}

// StrayLogs lists the names of the "-stray" directories in the dir, sorted.
func (d *Dir) StrayLogs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Clone(d.mu.strays)
	slices.Sort(out)
	return out
}

// renameOut closes tp's log (flushing it first if keep) and renames its
// directory with suffix. The log leaves the dir's map only once the rename
// is durable; if the rename fails the log stays listed but closed.
func (d *Dir) renameOut(tp TopicPartition, suffix string, keep bool) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.mu.logs[tp]
	if !ok {
		return "", fmt.Errorf("no such log: %w", os.ErrNotExist)
	}
	var err error
	if keep {
		err = l.Close()
	} else {
		err = l.closeFiles()
	}
	if err != nil {
		return "", err
	}
	name := renamedDirName(tp, suffix)
	if err := d.fs.Rename(l.Dir(), filepath.Join(d.path, name)); err != nil {
		return "", err
	}
	delete(d.mu.logs, tp)
	delete(d.mu.hw, tp)
	return name, d.syncDir()
}

// deleteDue deletes the "-delete" directories whose delay has passed, their
// files in steps (removeInSteps). One that cannot be deleted is logged and
// retried after another delay.
func (d *Dir) deleteDue() {
	d.mu.Lock()
	due := takeDue(&d.mu.deletes, d.cfg.Now())
	d.mu.Unlock()
	if len(due) == 0 {
		return
	}
	var failed []pendingDelete
	for _, p := range due {
		if err := removeInSteps(d.fs, filepath.Join(d.path, p.name), deleteStepBytes); err != nil {
			d.logger.Error("deleting removed log failed; will retry", "dir", p.name, "err", err)
			failed = append(failed, pendingDelete{name: p.name, due: d.deleteDue0()})
			continue
		}
		d.logger.Info("deleted removed log", "dir", p.name)
	}
	if err := d.syncDir(); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.logger.Error("fsync of log dir after deletes failed", "err", err)
	}
	if len(failed) > 0 {
		d.mu.Lock()
		d.mu.deletes = append(d.mu.deletes, failed...)
		d.mu.Unlock()
	}
}

// DataInLogDir lists what in the log dir at path shows that it already
// holds a broker's data: partition directories (live or "-stray") and
// meta.properties. A missing path holds nothing. A broker whose metadata is
// missing checks this before it creates an empty cluster over old data.
func DataInLogDir(path string) ([]string, error) {
	ents, err := os.ReadDir(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list log dir %s: %w", path, err)
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case name == MetaPropertiesFile && e.Type().IsRegular():
			out = append(out, name)
		case !e.IsDir():
		case strings.HasSuffix(name, StrayDirSuffix):
			if _, ok := parseRenamedDirName(name); ok {
				out = append(out, name)
			}
		default:
			if _, err := ParseTopicPartition(name); err == nil {
				out = append(out, name)
			}
		}
	}
	return out, nil
}
