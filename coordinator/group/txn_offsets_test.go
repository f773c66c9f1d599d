package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTxnOffsetCommitAppliesOnlyOnReplay(t *testing.T) {
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.Group = "g"
	req.TransactionalID = "tx"
	req.ProducerID, req.ProducerEpoch = 7, 0
	req.Generation = -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rt.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42, LeaderEpoch: -1}}
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{rt}
	resp, recs := c.TxnOffsetCommit(now, req)
	if len(recs) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("resp %+v, %d records", resp, len(recs))
	}
	fetch := func() int64 {
		f := kmsg.NewPtrOffsetFetchRequest()
		f.Version = 5
		f.Group = "g"
		f.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		rs, _ := c.OffsetFetch(now, nil, f)
		r := rs[0].Resp.(*kmsg.OffsetFetchResponse)
		if len(r.Topics) == 0 {
			return -1
		}
		return r.Topics[0].Partitions[0].Offset
	}
	if got := fetch(); got != -1 {
		t.Fatalf("pending transactional offset visible before commit: %d", got)
	}
	if err := c.Replay(recs[0].Key, recs[0].Value); err != nil {
		t.Fatal(err)
	}
	if got := fetch(); got != 42 {
		t.Fatalf("offset after commit = %d, want 42", got)
	}

	req.MemberID = "ghost"
	req.Generation = 3
	resp, recs = c.TxnOffsetCommit(now, req)
	if len(recs) != 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("commit from an unknown member: code %d, %d records", resp.Topics[0].Partitions[0].ErrorCode, len(recs))
	}
}
