package zkclient

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/kbroker/kbroker/controller/zkdata"
)

// claimAttempts bounds the re-reads of /latest_producer_id_block after a
// concurrent claim won the version check.
const claimAttempts = 10

// ClaimProducerIDBlock reserves the n producer ids after the last block
// handed out, for broker, with Kafka's ZkProducerIdManager scheme:
// /latest_producer_id_block holds the last block (missing or empty: none
// yet, the first block starts at 0), and the next one is written with a
// version check, so two claimers, of either kind, never get the same ids.
// It returns the block written.
func (c *Client) ClaimProducerIDBlock(broker int32, n int64) (zkdata.ProducerIDBlock, error) {
	if n <= 0 {
		return zkdata.ProducerIDBlock{}, fmt.Errorf("producer id block size %d", n)
	}
	for range claimAttempts {
		data, stat, err := c.Get(zkdata.ProducerIDBlockPath)
		start, version := int64(0), int32(-2) // -2: create the znode
		switch {
		case errors.Is(err, zk.ErrNoNode):
		case err != nil:
			return zkdata.ProducerIDBlock{}, fmt.Errorf("reading producer id block: %w", err)
		case len(data) == 0: // created empty by EnsurePersistentPaths
			version = stat.Version
		default:
			prev, err := zkdata.DecodeProducerIDBlock(data)
			if err != nil {
				return zkdata.ProducerIDBlock{}, err
			}
			start, version = prev.BlockEnd+1, stat.Version
		}
		block := zkdata.ProducerIDBlock{BrokerID: broker, BlockStart: start, BlockEnd: start + n - 1}
		if block.BlockEnd < start {
			return zkdata.ProducerIDBlock{}, fmt.Errorf("producer ids exhausted: the last block ends at %d", start-1)
		}
		enc, err := block.Encode()
		if err != nil {
			return zkdata.ProducerIDBlock{}, err
		}
		if version == -2 {
			_, err = c.CreateWithParents(zkdata.ProducerIDBlockPath, enc, 0)
		} else {
			_, err = c.Set(zkdata.ProducerIDBlockPath, enc, version)
		}
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) {
			continue
		}
		if err != nil {
			return zkdata.ProducerIDBlock{}, fmt.Errorf("claiming producer id block: %w", err)
		}
		return block, nil
	}
	return zkdata.ProducerIDBlock{}, errors.New("producer id block: too much contention")
}
