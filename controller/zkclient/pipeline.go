package zkclient

import (
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// MaxInFlight bounds the requests one Pipeline call keeps outstanding on
// the session.
const MaxInFlight = 128

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
