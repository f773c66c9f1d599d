package storage

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// passWaiter counts passes of the dir's background goroutine.
type passWaiter chan struct{}

func hookPasses(t *testing.T) passWaiter {
	t.Helper()
	passes := make(passWaiter, 100)
	testHookPass = func() {
		select {
		case passes <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { testHookPass = nil })
	return passes
}

// pass pokes d and waits for one full pass of its background goroutine that
// started after the poke.
func (p passWaiter) pass(t *testing.T, d *Dir) {
	t.Helper()
	for {
		select {
		case <-p:
			continue
		default:
		}
		break
	}
	d.poke()
	select {
	case <-p:
	case <-time.After(10 * time.Second):
		t.Fatal("background goroutine made no pass")
	}
	// The pass seen may have begun before the poke: wait for the next one.
	d.poke()
	select {
	case <-p:
	case <-time.After(10 * time.Second):
		t.Fatal("background goroutine made no pass")
	}
}

func openDirCfg(t *testing.T, path string, cfg DirConfig) *Dir {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	d, err := OpenDirConfig(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// renamed lists the directories in path with suffix.
func renamed(t *testing.T, path, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.HasSuffix(e.Name(), suffix) {
			out = append(out, e.Name())
		}
	}
	return out
}

var kafkaRenamed = regexp.MustCompile(`^(\S+)-(\d+)\.([0-9a-f]{32})-(delete|stray)$`)

func TestDirRemoveRenamesThenDeletesAfterDelay(t *testing.T) {
	passes := hookPasses(t)
	clock := newFakeClock()
	path := t.TempDir()
	d := openDirCfg(t, path, DirConfig{Now: clock.Now, FileDeleteDelayMs: 60000})
	defer d.Close()
	tp := TopicPartition{"gone", 2}
	l, err := d.Create(tp, Config{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, 0, batchOf(1, 1, 1))
	if err := d.Remove(tp); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, "gone-2")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("partition dir still there under its name: %v", err)
	}
	del := renamed(t, path, DeleteDirSuffix)
	if len(del) != 1 || !kafkaRenamed.MatchString(del[0]) || !strings.HasPrefix(del[0], "gone-2.") {
		t.Fatalf("-delete dirs %v", del)
	}
	if d.Log(tp) != nil {
		t.Fatal("log still listed")
	}
	if _, err := l.Append(batchOf(1, 1, 1), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("append to removed log: %v", err)
	}
	if err := d.Remove(tp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("second remove: %v", err)
	}
	if _, err := d.Create(tp, Config{}); err != nil {
		t.Fatalf("re-create while the old one waits for deletion: %v", err)
	}

	// Before the delay: kept, data and all.
	clock.Advance(59 * time.Second)
	passes.pass(t, d)
	if got := renamed(t, path, DeleteDirSuffix); len(got) != 1 {
		t.Fatalf("deleted before file.delete.delay.ms: %v", got)
	}
	if segs, _ := filepath.Glob(filepath.Join(path, del[0], "*.log")); len(segs) != 1 {
		t.Fatalf("segments in the -delete dir: %v", segs)
	}
	clock.Advance(time.Second)
	passes.pass(t, d)
	if got := renamed(t, path, DeleteDirSuffix); len(got) != 0 {
		t.Fatalf("not deleted after file.delete.delay.ms: %v", got)
	}
	if d.Log(tp) == nil {
		t.Fatal("re-created log gone")
	}
}

func TestDirReopenDeletesLeftoverDeleteDirsAfterDelay(t *testing.T) {
	passes := hookPasses(t)
	clock := newFakeClock()
	path := t.TempDir()
	cfg := DirConfig{Now: clock.Now, FileDeleteDelayMs: 1000}
	d := openDirCfg(t, path, cfg)
	tp := TopicPartition{"t", 0}
	l, _ := d.Create(tp, Config{})
	mustAppend(t, l, 0, batchOf(1, 1, 1))
	if err := d.Remove(tp); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// A name Kafka wrote for a topic with dots and dashes.
	kafkaName := "my.topic-x-12.0123456789abcdef0123456789abcdef-delete"
	if err := os.Mkdir(filepath.Join(path, kafkaName), 0o755); err != nil {
		t.Fatal(err)
	}

	d = openDirCfg(t, path, cfg)
	defer d.Close()
	if n := len(d.Logs()); n != 0 {
		t.Fatalf("-delete dirs loaded as %d logs", n)
	}
	passes.pass(t, d)
	if got := renamed(t, path, DeleteDirSuffix); len(got) != 2 {
		t.Fatalf("leftover -delete dirs deleted before the delay: %v", got)
	}
	clock.Advance(time.Second)
	passes.pass(t, d)
	if got := renamed(t, path, DeleteDirSuffix); len(got) != 0 {
		t.Fatalf("leftover -delete dirs not deleted: %v", got)
	}
}

func TestDirMarkStrayKeepsData(t *testing.T) {
	passes := hookPasses(t)
	clock := newFakeClock()
	path := t.TempDir()
	cfg := DirConfig{Now: clock.Now, FileDeleteDelayMs: 1}
	d := openDirCfg(t, path, cfg)
	tp := TopicPartition{"orphan", 1}
	l, _ := d.Create(tp, Config{})
	for i := 0; i < 5; i++ {
		mustAppend(t, l, 0, batchOf(2, 1, 10))
	}
	name, err := d.MarkStray(tp)
	if err != nil {
		t.Fatal(err)
	}
	if !kafkaRenamed.MatchString(name) || !strings.HasPrefix(name, "orphan-1.") || !strings.HasSuffix(name, StrayDirSuffix) {
		t.Fatalf("stray name %q", name)
	}
	if got := d.StrayLogs(); len(got) != 1 || got[0] != name {
		t.Fatalf("stray logs %v", got)
	}
	if d.Log(tp) != nil {
		t.Fatal("stray log still listed")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d = openDirCfg(t, path, cfg)
	defer d.Close()
	clock.Advance(time.Hour)
	passes.pass(t, d)
	if n := len(d.Logs()); n != 0 {
		t.Fatalf("stray dir loaded as %d logs", n)
	}
	if got := d.StrayLogs(); len(got) != 1 || got[0] != name {
		t.Fatalf("stray logs after reopen %v", got)
	}
	// The data is intact: the stray dir opens as a log with every batch.
	sl, err := Open(filepath.Join(path, name), Config{Logger: quiet}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	checkDense(t, readAll(t, sl, 0), 0, 10)
}

func TestRenamedDirNames(t *testing.T) {
	for _, tp := range []TopicPartition{{"a", 0}, {"with.dots-and-dashes", 17}, {strings.Repeat("x", 249), 2147483647}} {
		for _, suf := range []string{DeleteDirSuffix, StrayDirSuffix} {
			name := renamedDirName(tp, suf)
			if len(name) > 255 || !kafkaRenamed.MatchString(name) || !strings.HasSuffix(name, suf) {
				t.Errorf("%v %s: %q", tp, suf, name)
			}
			if got, ok := parseRenamedDirName(name); !ok || got != suf {
				t.Errorf("parse %q: %q %v", name, got, ok)
			}
		}
	}
	for _, name := range []string{"t-0", "t-delete", "t-0-delete", "t.abc-delete", "t-0.-stray", "-0.abc-stray"} {
		if _, ok := parseRenamedDirName(name); ok {
			t.Errorf("%q parsed as renamed", name)
		}
	}
}

func TestDataInLogDir(t *testing.T) {
	path := t.TempDir()
	if got, err := DataInLogDir(filepath.Join(path, "missing")); err != nil || len(got) != 0 {
		t.Fatalf("missing dir: %v %v", got, err)
	}
	for _, n := range []string{"t-0.0123456789abcdef0123456789abcdef-delete", "notapartition", "lost+found"} {
		os.Mkdir(filepath.Join(path, n), 0o755)
	}
	os.WriteFile(filepath.Join(path, CleanShutdownFile), nil, 0o644)
	os.WriteFile(filepath.Join(path, RecoveryPointCheckpointFile), []byte("0\n0\n"), 0o644)
	if got, err := DataInLogDir(path); err != nil || len(got) != 0 {
		t.Fatalf("dir without data: %v %v", got, err)
	}
	os.Mkdir(filepath.Join(path, "t-0"), 0o755)
	os.Mkdir(filepath.Join(path, "t-1.0123456789abcdef0123456789abcdef-stray"), 0o755)
	os.WriteFile(filepath.Join(path, MetaPropertiesFile), nil, 0o644)
	got, err := DataInLogDir(path)
	if err != nil || strings.Join(got, ",") != "meta.properties,t-0,t-1.0123456789abcdef0123456789abcdef-stray" {
		t.Fatalf("data: %v %v", got, err)
	}
}
