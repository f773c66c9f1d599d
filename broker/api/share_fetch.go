package api

// ShareFetch v0–v2 (KIP-932; v1 adds MaxRecords, BatchSize and
// AcquisitionLockTimeoutMillis (KIP-1206), v2 ShareAcquireMode and
// IsRenewAck (KIP-1222); v2 is Kafka 4.2's stable version).
//
// Share session (per group and member): epoch 0 opens one with the
// request's partitions (acknowledgements are refused: INVALID_REQUEST);
// epoch > 0 must be the session's epoch (else INVALID_SHARE_SESSION_EPOCH,
// or SHARE_SESSION_NOT_FOUND) and adds the listed partitions and drops
// ForgottenTopicsData; epoch -1 applies the acknowledgements and closes
// the session, releasing the records the member still holds in it.
//
// Piggybacked acknowledgements are applied first, once, and reported per
// partition in AcknowledgeErrorCode. Then, for every session partition, in
// a rotating order, records are acquired from the log up to the high
// watermark (the last stable offset for share.isolation.level
// read_committed; aborted records are not filtered out), at most
// MaxRecords in all (500 when unset) and about MaxBytes of batches; the
// answer carries the whole batches holding acquired offsets and the
// AcquiredRecords ranges, which are what the member owns. With nothing
// acquired the request waits up to MaxWaitMillis for an append to a
// session partition or for records to be released. Both acquire modes
// (KIP-1206) acquire exactly as many records as allowed; batches are
// never acquired whole beyond MaxRecords. A renew-only request
// (IsRenewAck) applies its acknowledgements and fetches nothing. A
// partition answered with an error (unknown topic or partition, a storage
// error, or in a cluster NOT_LEADER_OR_FOLLOWER with the current leader
// and its endpoint) ends the wait: the answer goes at once.

import (
	"time"

	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareReadChunk is how much log one read step takes while acquiring.
const shareReadChunk = 256 << 10

func (b *API) handleShareFetch(ctx *network.RequestContext, req *kmsg.ShareFetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	group, member, ok := shareMemberCheck(req.GroupID, req.MemberID)
	if !ok {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	renew := req.Version >= 2 && req.IsRenewAck
	var acks []coordhost.ShareAcks
	var listed []share.TopicPartition
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			tp := share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}
			listed = append(listed, tp)
			if len(rp.AcknowledgementBatches) > 0 {
				a := coordhost.ShareAcks{TP: tp}
				for _, ab := range rp.AcknowledgementBatches {
					a.Batches = append(a.Batches, share.AckBatch{First: ab.FirstOffset, Last: ab.LastOffset, Types: ab.AcknowledgeTypes})
				}
				acks = append(acks, a)
			} else if renew {
				resp.ErrorCode = kerr.InvalidRequest.Code // a renew request carries acknowledgements only
				return resp
			}
		}
	}
	if renew && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if req.ShareSessionEpoch == 0 && len(acks) > 0 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	var forgotten []share.TopicPartition
	for _, ft := range req.ForgottenTopicsData {
		for _, p := range ft.Partitions {
			forgotten = append(forgotten, share.TopicPartition{TopicID: ft.TopicID, Partition: p})
		}
	}

	h := b.co.Shares()
	var (
		ackCodes []int16
		targets  []share.TopicPartition
		topErr   int16
		lockMs   int32
		maxRecs  int32
		readComm bool
	)
	err := h.Call(func(c *share.Coordinator, now time.Time) {
		lockMs = c.LockDurationMs(group)
		maxRecs = c.MaxFetchRecords()
		readComm = c.ReadCommitted(group)
		switch {
		case req.ShareSessionEpoch == -1:
			if !c.HasSession(group, member) {
				topErr = kerr.ShareSessionNotFound.Code
				return
			}
			ackCodes = b.co.ApplyShareAcks(c, now, group, member, renew, acks)
			c.CloseSession(group, member)
			return
		case req.ShareSessionEpoch == 0:
			c.OpenSession(group, member, listed)
		default:
			if topErr = c.UpdateSession(group, member, req.ShareSessionEpoch, listed, forgotten); topErr != 0 {
				return
			}
			ackCodes = b.co.ApplyShareAcks(c, now, group, member, renew, acks)
		}
		targets = c.SessionPartitions(group, member)
	})
	if err != nil {
		ctx.CloseConn = true
		return nil
	}
	resp.AcquisitionLockTimeoutMillis = lockMs
	if topErr != 0 {
		resp.ErrorCode = topErr
		return resp
	}
	out := newShareFetchAnswer(resp)
	for i, a := range acks {
		out.part(a.TP).AcknowledgeErrorCode = ackCodes[i]
	}
	if req.ShareSessionEpoch == 0 {
		for _, tp := range listed {
			out.part(tp)
		}
	}
	if req.ShareSessionEpoch == -1 || renew {
		return resp
	}

	if req.Version >= 1 && req.MaxRecords > 0 {
		maxRecs = req.MaxRecords
	}
	maxBytes := int(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = int(^uint(0) >> 1)
	}
	// One watch wakes this request: appends, HW moves and state changes
	// of its partitions, and the share host's releases. It is in place
	// before the first read, so nothing in between is missed.
	w := replica.NewWatch()
	var timeout <-chan time.Time
	if req.MaxWaitMillis > 0 {
		timer := time.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
		defer timer.Stop()
		timeout = timer.C
		h.AddWatch(w)
		defer h.RemoveWatch(w)
		for _, p := range b.sharePartitions(targets) {
			p.AddWatch(w)
			defer p.RemoveWatch(w)
		}
	}
	for {
		got, failed := 0, false
		h.LoadStates(group, targets) // cluster mode: coordhost/share_cluster.go
		err := h.Call(func(c *share.Coordinator, now time.Time) {
			got, failed = b.acquireShare(c, now, group, member, readComm, targets, int(maxRecs), maxBytes, out)
		})
		if err != nil {
			ctx.CloseConn = true
			return nil
		}
		if failed {
			b.shareFetchLeaderHints(ctx, resp)
		}
		if got > 0 || failed || req.MaxWaitMillis <= 0 {
			return resp
		}
		select {
		case <-w.C():
		case <-timeout:
			return resp
		case <-b.closing:
			return resp
		}
	}
}

// sharePartitions are the existing partitions of targets.
func (b *API) sharePartitions(targets []share.TopicPartition) []*replica.Partition {
	var out []*replica.Partition
	for _, tp := range targets {
		if t := b.rm.TopicByID(tp.TopicID); t != nil && tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions) {
			out = append(out, t.Partitions[tp.Partition])
		}
	}
	return out
}

// shareFetchAnswer builds a ShareFetch response, one entry per partition.
type shareFetchAnswer struct {
	resp   *kmsg.ShareFetchResponse
	topics map[[16]byte]int
	parts  map[share.TopicPartition]int
}

func newShareFetchAnswer(resp *kmsg.ShareFetchResponse) *shareFetchAnswer {
	return &shareFetchAnswer{resp: resp, topics: map[[16]byte]int{}, parts: map[share.TopicPartition]int{}}
}

// part returns the response entry of tp, adding it on first use.
func (a *shareFetchAnswer) part(tp share.TopicPartition) *kmsg.ShareFetchResponseTopicPartition {
	ti, ok := a.topics[tp.TopicID]
	if !ok {
		ti = len(a.resp.Topics)
		a.topics[tp.TopicID] = ti
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = tp.TopicID
		a.resp.Topics = append(a.resp.Topics, t)
	}
	rt := &a.resp.Topics[ti]
	pi, ok := a.parts[tp]
	if !ok {
		pi = len(rt.Partitions)
		a.parts[tp] = pi
		p := kmsg.NewShareFetchResponseTopicPartition()
		p.Partition = tp.Partition
		// No leader hint: the Java default -1/-1 (0/0 would name node 0).
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
		p.Records = []byte{}
		rt.Partitions = append(rt.Partitions, p)
	}
	return &rt.Partitions[pi]
}

// acquireShare acquires records of the session partitions into out and
// returns how many, and whether a partition was answered with an error
// (the fetch then answers at once).
func (b *API) acquireShare(c *share.Coordinator, now time.Time, group, member string, readCommitted bool, targets []share.TopicPartition, maxRecs, maxBytes int, out *shareFetchAnswer) (int, bool) {
	failed := false
	h := b.co.Shares()
	total, bytes := 0, 0
	n := len(targets)
	start := 0
	if n > 0 {
		start = int(h.NextRotationLocked() % uint64(n))
	}
	for i := 0; i < n; i++ {
		tp := targets[(start+i)%n]
		t := b.rm.TopicByID(tp.TopicID)
		if t == nil {
			out.part(tp).ErrorCode = kerr.UnknownTopicID.Code
			failed = true
			continue
		}
		if tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			out.part(tp).ErrorCode = kerr.UnknownTopicOrPartition.Code
			failed = true
			continue
		}
		p := t.Partitions[tp.Partition]
		if !p.IsLeader() {
			out.part(tp).ErrorCode = kerr.NotLeaderForPartition.Code
			failed = true
			continue
		}
		if total >= maxRecs || bytes >= maxBytes {
			continue
		}
		got, data, ranges, errCode := b.acquirePartition(c, now, group, member, readCommitted, tp, p, maxRecs-total, maxBytes-bytes, bytes == 0)
		if errCode != 0 {
			out.part(tp).ErrorCode = errCode
			failed = true
			continue
		}
		if got == 0 {
			continue
		}
		sp := out.part(tp)
		sp.Records = append(sp.Records, data...)
		for _, r := range ranges {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = r.First, r.Last, r.DeliveryCount
			sp.AcquiredRecords = append(sp.AcquiredRecords, ar)
		}
		total += got
		bytes += len(data)
	}
	return total, failed
}

// acquirePartition reads one partition from the offset the coordinator
// names and acquires what it finds, chunk by chunk, until maxRecs records,
// about maxBytes of batches, the high watermark, or a full in-flight
// window. It returns the records acquired, the batches holding them, and
// their ranges.
func (b *API) acquirePartition(c *share.Coordinator, now time.Time, group, member string, readCommitted bool, tp share.TopicPartition, p *replica.Partition, maxRecs, maxBytes int, first bool) (int, []byte, []share.Range, int16) {
	logStart := p.Log.LogStartOffset()
	end := p.HighWatermark()
	if readCommitted {
		end = p.LastStableOffset()
	}
	var (
		data   []byte
		ranges []share.Range
		got    int
	)
	pos, ok := c.FetchOffset(group, tp, logStart, end)
	for ok && got < maxRecs && len(data) < maxBytes {
		chunk := min(shareReadChunk, maxBytes-len(data))
		raw, err := p.Log.Read(pos, chunk, end, first && len(data) == 0)
		if err != nil {
			b.log.Warn("share fetch read failed", "topic", p.Topic.Meta.Name, "partition", p.Index, "offset", pos, "err", err)
			if len(data) == 0 {
				return 0, nil, nil, kerr.KafkaStorageError.Code
			}
			break
		}
		if len(raw) == 0 {
			break
		}
		var batches []share.Batch
		var spans [][]byte
		var next int64
		for rest := raw; len(rest) > 0; {
			batch, hdr, r, err := records.Split(rest)
			if err != nil {
				break
			}
			rest = r
			batches = append(batches, share.Batch{First: hdr.BaseOffset, Last: hdr.LastOffset(), Control: hdr.IsControl()})
			spans = append(spans, batch)
			next = hdr.NextOffset()
		}
		if len(batches) == 0 {
			break
		}
		acq := c.Acquire(now, group, member, tp, batches, maxRecs-got)
		// Keep the batches that hold an acquired offset.
		ri := 0
		for bi, bt := range batches {
			for ri < len(acq) && acq[ri].Last < bt.First {
				ri++
			}
			if ri < len(acq) && acq[ri].First <= bt.Last {
				data = append(data, spans[bi]...)
			}
		}
		for _, r := range acq {
			got += int(r.Last - r.First + 1)
		}
		ranges = append(ranges, acq...)
		if pos, ok = c.FetchOffset(group, tp, logStart, end); ok && pos < next {
			// The next acquirable offset lies before what was read:
			// only possible once max records were taken.
			break
		}
	}
	return got, data, ranges, 0
}

// shareMemberCheck validates the group and member ids of ShareFetch and
// ShareAcknowledge: present, and a member id of at most 36 characters.
func shareMemberCheck(group, member *string) (string, string, bool) {
	if group == nil || member == nil || *group == "" || *member == "" || len(*member) > 36 {
		return "", "", false
	}
	return *group, *member, true
}
