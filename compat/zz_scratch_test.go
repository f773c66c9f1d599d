package compat

import (
	"bufio"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestScratchKfake2(t *testing.T) {
	c, _ := kfake.NewCluster(kfake.NumBrokers(1))
	defer c.Close()
	t.Run("sarama", func(t *testing.T) { saramaCodecs(t, c.ListenAddrs()[0]) })
	t.Run("kcat", func(t *testing.T) { kcatSuite(t, c.ListenAddrs()[0]) })
}

func TestScratchKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	adm := newAdmin(t, addr)
	for _, cd := range codecs {
		topic := "codec-" + cd.name
		createTopic(t, adm, topic, 4, nil)
		prod := newKgo(t, addr, kgo.ProducerBatchCompression(cd.codec))
		rs := keyedRecords(topic, 0, 1000)
		produceSync(t, prod, rs)
		checkDense(t, byPartition(rs))
		got := consumeN(t, addr, topic, 4, 1000)
		compareByPartition(t, rs, got)
	}
	conn := rawDial(t, addr)
	conn.SetDeadline(time.Now().Add(rawTimeout))
	rd := bufio.NewReader(conn)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	conn.Write(appendKmsg(nil, req, 41))
	corr, body := readFrame(t, rd)
	resp := decodeResponse(t, req, body).(*kmsg.ApiVersionsResponse)
	t.Log(corr, resp.ErrorCode, len(resp.ApiKeys))
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	var out []byte
	for i := 1; i <= 10; i++ {
		out = appendKmsg(out, md, int32(i))
	}
	conn.Write(out)
	for i := 1; i <= 10; i++ {
		corr, body := readFrame(t, rd)
		r := decodeResponse(t, md, body).(*kmsg.MetadataResponse)
		if corr != int32(i) || len(r.Topics) != 5 {
			t.Fatal(corr, len(r.Topics))
		}
	}
}
