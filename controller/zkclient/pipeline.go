package zkclient

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// MaxInFlight bounds the requests one Pipeline call keeps outstanding on
// the session, below ZooKeeper's globalOutstandingLimit (1,000 by default,
// past which the server stops reading the connection). 512 rather than
// 128 took the new controller's read of 30,000 partition states from
// 1.5–2.8 s to 1.35 s on the 2-core test machine (issue 26).
const MaxInFlight = 512

// Pipeline runs f(0) … f(n-1) with up to MaxInFlight calls at once and
// returns when all have returned. go-zookeeper writes the requests of
// concurrent callers to the one connection without waiting for each answer
// (ZooKeeper answers a session's requests in order), so n round trips cost
// about n/MaxInFlight of them and ZooKeeper commits concurrent writes
// together: this is Kafka's ZooKeeperClient.handleRequests, which sends its
// async requests back to back. f must be safe to run concurrently; it
// reports its results through what it closes over, by index.
func Pipeline(n int, f func(i int)) {
	workers := min(n, MaxInFlight)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// GetResult is one read of GetMany.
type GetResult struct {
	Data []byte
	Stat *zk.Stat
	Err  error
}

// GetMany reads paths, pipelined; the results are in the order of paths.
func (c *Client) GetMany(paths []string) []GetResult {
	out := make([]GetResult, len(paths))
	Pipeline(len(paths), func(i int) {
		r := &out[i]
		r.Data, r.Stat, r.Err = c.Get(paths[i])
	})
	return out
}

// MultiBatch is how many znode writes one batched multi-op carries, besides
// its version check: a few hundred bytes each, far under ZooKeeper's 1 MiB
// jute.maxbuffer.
const MultiBatch = 200

// SetOp is one conditional write of SetManyChecked.
type SetOp struct {
	Path    string
	Data    []byte
	Version int32
}

// CheckedResult is the outcome of one write of SetManyChecked or
// CreateManyChecked: the new data version, or whether the version check
// failed (the other node moved), or the write's own error.
type CheckedResult struct {
	Version     int32
	CheckFailed bool
	Err         error
}

// SetManyChecked is SetChecked of many znodes: up to MultiBatch writes go
// in one multi-op after the check of checkPath at checkVersion, and the
// multi-ops are pipelined. A multi-op is atomic, so when one of its writes
// fails (a stale version) none is made, and its writes are made again one
// SetChecked at a time to find out which: each write's outcome is the one
// it would have had alone. The results are in the order of ops.
func (c *Client) SetManyChecked(checkPath string, checkVersion int32, ops []SetOp) []CheckedResult {
	out := make([]CheckedResult, len(ops))
	c.batchChecked(checkPath, checkVersion, len(ops), out,
		func(i int) []any {
			return []any{&zk.SetDataRequest{Path: c.abs(ops[i].Path), Data: ops[i].Data, Version: ops[i].Version}}
		},
		func(i int, res []zk.MultiResponse) { out[i].Version = res[0].Stat.Version },
		func(i int) CheckedResult {
			stat, checkFailed, err := c.SetChecked(checkPath, checkVersion, ops[i].Path, ops[i].Data, ops[i].Version)
			r := CheckedResult{CheckFailed: checkFailed, Err: err}
			if err == nil {
				r.Version = stat.Version
			}
			return r
		})
	return out
}

// CreateOp is one creation of CreateManyChecked: Parent (empty: none) is
// created first, empty and persistent, unless it exists; then Path with
// Data.
type CreateOp struct {
	Parent, Path string
	Data         []byte
}

// CreateManyChecked is CreateChecked of many znodes, batched and pipelined
// as SetManyChecked; a batch that fails (a parent or znode that exists) is
// made again one znode at a time, where an existing parent is no error.
func (c *Client) CreateManyChecked(checkPath string, checkVersion int32, ops []CreateOp) []CheckedResult {
	out := make([]CheckedResult, len(ops))
	c.batchChecked(checkPath, checkVersion, len(ops), out,
		func(i int) []any {
			var reqs []any
			if ops[i].Parent != "" {
				reqs = append(reqs, &zk.CreateRequest{Path: c.abs(ops[i].Parent), Acl: zk.WorldACL(zk.PermAll)})
			}
			return append(reqs, &zk.CreateRequest{Path: c.abs(ops[i].Path), Data: ops[i].Data, Acl: zk.WorldACL(zk.PermAll)})
		},
		func(int, []zk.MultiResponse) {},
		func(i int) CheckedResult {
			if ops[i].Parent != "" {
				if _, err := c.Create(ops[i].Parent, nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					return CheckedResult{Err: fmt.Errorf("creating %s: %w", ops[i].Parent, err)}
				}
			}
			checkFailed, err := c.CreateChecked(checkPath, checkVersion, ops[i].Path, ops[i].Data)
			return CheckedResult{CheckFailed: checkFailed, Err: err}
		})
	return out
}

// batchChecked runs n items' requests (reqs(i)) in multi-ops of up to
// MultiBatch items after a version check of checkPath, pipelined. A
// successful multi-op gives each item its responses (ok); a failed check
// fails all its items with CheckFailed; any other failure makes each item
// alone (single).
func (c *Client) batchChecked(checkPath string, checkVersion int32, n int, out []CheckedResult,
	reqs func(i int) []any, ok func(i int, res []zk.MultiResponse), single func(i int) CheckedResult) {
	batches := (n + MultiBatch - 1) / MultiBatch
	Pipeline(batches, func(b int) {
		lo, hi := b*MultiBatch, min(n, (b+1)*MultiBatch)
		ops := []any{&zk.CheckVersionRequest{Path: c.abs(checkPath), Version: checkVersion}}
		spans := make([]int, 0, hi-lo+1)
		for i := lo; i < hi; i++ {
			spans = append(spans, len(ops))
			ops = append(ops, reqs(i)...)
		}
		spans = append(spans, len(ops))
		res, err := c.conn.Multi(ops...)
		switch {
		case err == nil && len(res) == len(ops):
			for i := lo; i < hi; i++ {
				k := i - lo
				ok(i, res[spans[k]:spans[k+1]])
			}
			return
		case len(res) == len(ops) && checkFailed0(res[0].Error):
			for i := lo; i < hi; i++ {
				out[i] = CheckedResult{CheckFailed: true, Err: res[0].Error}
			}
			return
		}
		for i := lo; i < hi; i++ {
			out[i] = single(i)
		}
	})
}
