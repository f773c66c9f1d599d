package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClientQuotasCluster: a quota altered through one broker is written
// in Kafka's ZooKeeper layout (/config/users/<u>, /config/users/<default>/clients/<c>)
// and reaches the other broker through /config/changes.
func TestClientQuotasCluster(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 2, nil)
	waitClusterFormed(t, bs, 2)

	alter := kmsg.NewPtrAlterClientQuotasRequest()
	entry := func(op kmsg.AlterClientQuotasRequestEntryOp, comps ...[2]string) kmsg.AlterClientQuotasRequestEntry {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		for _, c := range comps {
			ee := kmsg.NewAlterClientQuotasRequestEntryEntity()
			ee.Type = c[0]
			if c[1] != "" {
				n := c[1]
				ee.Name = &n
			}
			e.Entity = append(e.Entity, ee)
		}
		e.Ops = append(e.Ops, op)
		return e
	}
	op := func(k string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
		o := kmsg.NewAlterClientQuotasRequestEntryOp()
		o.Key, o.Value = k, v
		return o
	}
	alter.Entries = append(alter.Entries,
		entry(op("producer_byte_rate", 1024), [2]string{"user", "alice"}),
		entry(op("request_percentage", 12.5), [2]string{"user", ""}, [2]string{"client-id", "app"}))
	resp, err := send(bs[0].Addr(), alter)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.(*kmsg.AlterClientQuotasResponse).Entries {
		if e.ErrorCode != 0 {
			t.Fatalf("alter: error %d %v", e.ErrorCode, e.ErrorMessage)
		}
	}

	waitFor(t, 30*time.Second, "broker 2 describes both quotas", func() (bool, error) {
		r, err := send(bs[1].Addr(), kmsg.NewPtrDescribeClientQuotasRequest())
		if err != nil {
			return false, err
		}
		got := map[string]float64{}
		for _, e := range r.(*kmsg.DescribeClientQuotasResponse).Entries {
			var parts []string
			for _, c := range e.Entity {
				n := "<default>"
				if c.Name != nil {
					n = *c.Name
				}
				parts = append(parts, c.Type+"="+n)
			}
			for _, v := range e.Values {
				got[strings.Join(parts, ",")+" "+v.Key] = v.Value
			}
		}
		return got["user=alice producer_byte_rate"] == 1024 && got["user=<default>,client-id=app request_percentage"] == 12.5, nil
	})

	zc, err := zkclient.Dial(zkclient.Config{Connect: z.Addr + "/kbroker", SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	for path, want := range map[string]string{
		"/config/users/alice":                 `"producer_byte_rate":"1024"`,
		"/config/users/<default>/clients/app": `"request_percentage":"12.5"`,
	} {
		data, _, err := zc.Get(path)
		if err != nil || !strings.Contains(string(data), want) || !strings.Contains(string(data), `"version":1`) {
			t.Errorf("%s: %s %v, want %s", path, data, err, want)
		}
	}
	changes, _, err := zc.Children("/config/changes")
	if err != nil || len(changes) < 2 {
		t.Fatalf("/config/changes: %v %v", changes, err)
	}
}
