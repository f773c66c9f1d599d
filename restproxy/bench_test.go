package restproxy_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduce compares a v2 binary produce of 100 records of 1 KiB per
// HTTP call with a native franz-go ProduceSync of the same batch, on one
// in-process broker: go test ./restproxy -run '^$' -bench Produce.
func BenchmarkProduce(b *testing.B) {
	const batch, size = 100, 1024
	e := start(b, nil)
	e.createTopic("bench", 1)
	value := make([]byte, size)
	if _, err := rand.Read(value); err != nil {
		b.Fatal(err)
	}
	var body bytes.Buffer
	body.WriteString(`{"records":[`)
	for i := range batch {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"value":%q}`, base64.StdEncoding.EncodeToString(value))
	}
	body.WriteString(`]}`)

	b.Run("http", func(b *testing.B) {
		b.SetBytes(batch * size)
		for b.Loop() {
			resp, err := e.hc.Post(e.base+"/topics/bench", ctBinary, bytes.NewReader(body.Bytes()))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatal(resp.Status)
			}
		}
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("native", func(b *testing.B) {
		cl := e.kafka(kgo.DefaultProduceTopic("bench"), kgo.ProducerLinger(0))
		recs := make([]*kgo.Record, batch)
		b.SetBytes(batch * size)
		for b.Loop() {
			for i := range recs {
				recs[i] = &kgo.Record{Value: value}
			}
			if err := cl.ProduceSync(e.ctx, recs...).FirstErr(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
	})
}
