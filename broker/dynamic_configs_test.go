package broker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerConfig returns a broker config's value, source and synonyms as
// DescribeConfigs reports them for broker id (-1: the cluster default,
// where an absent config is reported as ok=false).
func brokerConfig(t *testing.T, ctx context.Context, adm *kadm.Client, id int32, key string) (c kadm.Config, ok bool) {
	t.Helper()
	var ids []int32
	if id >= 0 {
		ids = []int32{id}
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, ids...)
	if err != nil {
		t.Fatal(err)
	}
	if len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe broker %d: %+v", id, rcs)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == key {
			return c, true
		}
	}
	return kadm.Config{}, false
}

// alterBroker runs IncrementalAlterConfigs on broker id (-1: the cluster default).
func alterBroker(ctx context.Context, adm *kadm.Client, id int32, cs ...kadm.AlterConfig) error {
	var ids []int32
	if id >= 0 {
		ids = []int32{id}
	}
	resp, err := adm.AlterBrokerConfigs(ctx, cs, ids...)
	if err != nil {
		return err
	}
	for _, r := range resp {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

func TestDynamicRetentionTakesEffectAndPersists(t *testing.T) {
	dir := t.TempDir()
	static := map[string]string{"log.segment.bytes": "1024", "log.retention.check.interval.ms": "20"}
	b := startTestBroker(t, dir, static)
	ctx := testCtx(t)
	adm, cl := newAdmin(t, b)
	mustCreateTopic(t, ctx, adm, "dyn", 1, nil)
	produceN(t, ctx, cl, "dyn", 0, 40, func(i int) *kgo.Record { return &kgo.Record{Value: make([]byte, 200)} })
	startOffset := func() int64 {
		t.Helper()
		so, err := adm.ListStartOffsets(ctx, "dyn")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := so.Lookup("dyn", 0)
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		return o.Offset
	}
	if so := startOffset(); so != 0 {
		t.Fatalf("start offset %d before any retention change", so)
	}
	if c, _ := brokerConfig(t, ctx, adm, 0, "log.retention.ms"); c.Source != kmsg.ConfigSourceDefaultConfig || readOnly(t, ctx, cl, "log.retention.ms") {
		t.Fatalf("log.retention.ms before: %+v", c)
	}

	// The cluster-wide default: every broker, every topic without an override.
	if err := alterBroker(ctx, adm, -1, kadm.AlterConfig{Name: "log.retention.ms", Value: strp("1")}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for startOffset() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("log.retention.ms=1 deleted no segment of the existing topic")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v, src := topicConfig(t, ctx, adm, "dyn", "retention.ms"); v != "1" || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("topic retention.ms = %s from %v", v, src)
	}
	c, _ := brokerConfig(t, ctx, adm, 0, "log.retention.ms")
	if c.MaybeValue() != "1" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("broker log.retention.ms = %s from %v", c.MaybeValue(), c.Source)
	}
	if d, ok := brokerConfig(t, ctx, adm, -1, "log.retention.ms"); !ok || d.MaybeValue() != "1" || d.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("cluster default: %+v %v", d, ok)
	}
	if _, ok := brokerConfig(t, ctx, adm, -1, "log.segment.bytes"); ok {
		t.Fatal("the cluster default lists a config it does not set")
	}

	// This broker's own override wins over the default, with both in the synonyms.
	if err := alterBroker(ctx, adm, 0, kadm.AlterConfig{Name: "log.retention.ms", Value: strp("86400000")}); err != nil {
		t.Fatal(err)
	}
	c, _ = brokerConfig(t, ctx, adm, 0, "log.retention.ms")
	if c.MaybeValue() != "86400000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig || len(c.Synonyms) < 2 ||
		c.Synonyms[1].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("per-broker log.retention.ms: %+v", c)
	}
	if c, _ := brokerConfig(t, ctx, adm, 0, "log.segment.bytes"); c.Source != kmsg.ConfigSourceStaticBrokerConfig || c.MaybeValue() != "1024" {
		t.Fatalf("static log.segment.bytes: %+v", c)
	}

	// Both survive a restart.
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, static)
	adm, _ = newAdmin(t, b)
	if c, _ := brokerConfig(t, ctx, adm, 0, "log.retention.ms"); c.MaybeValue() != "86400000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("after restart: %+v", c)
	}
	if v, src := topicConfig(t, ctx, adm, "dyn", "retention.ms"); v != "86400000" || src != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("topic retention.ms after restart = %s from %v", v, src)
	}
	// Deleting the broker override falls back to the cluster default.
	if err := alterBroker(ctx, adm, 0, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "log.retention.ms"}); err != nil {
		t.Fatal(err)
	}
	if v, src := topicConfig(t, ctx, adm, "dyn", "retention.ms"); v != "1" || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("after delete: %s from %v", v, src)
	}
}

func TestDynamicMessageMaxBytesAndRefusals(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	adm, cl := newAdmin(t, b)
	mustCreateTopic(t, ctx, adm, "mm", 1, nil)
	big := &kgo.Record{Topic: "mm", Value: make([]byte, 400)}
	if err := cl.ProduceSync(ctx, big).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := alterBroker(ctx, adm, 0, kadm.AlterConfig{Name: "message.max.bytes", Value: strp("200")}); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("produce over the dynamic message.max.bytes: %v", err)
	}
	// Thread counts are accepted and reported though kbroker has no pools.
	if err := alterBroker(ctx, adm, -1, kadm.AlterConfig{Name: "num.io.threads", Value: strp("16")}); err != nil {
		t.Fatal(err)
	}
	if c, _ := brokerConfig(t, ctx, adm, 0, "num.io.threads"); c.MaybeValue() != "16" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("num.io.threads: %+v", c)
	}
	if !readOnly(t, ctx, cl, "log.dirs") {
		t.Fatal("log.dirs is not read-only")
	}
	for _, tc := range []struct {
		id   int32
		cfg  kadm.AlterConfig
		want string
	}{
		{0, kadm.AlterConfig{Name: "log.dirs", Value: strp("/elsewhere")}, "Cannot update these configs dynamically: [log.dirs]"},
		{-1, kadm.AlterConfig{Name: "ssl.keystore.location", Value: strp("/x.pem")}, "only per-listener using the listener prefix"},
		{-1, kadm.AlterConfig{Name: "listener.name.plaintext.ssl.keystore.location", Value: strp("/x.pem")}, "broker id must be specified"},
		{0, kadm.AlterConfig{Name: "listener.name.plaintext.ssl.keystore.location", Value: strp("/x.pem")}, "not an SSL or SASL_SSL listener"},
		{0, kadm.AlterConfig{Name: "log.retention.ms", Value: strp("soon")}, "Invalid value soon for configuration log.retention.ms"},
		{0, kadm.AlterConfig{Name: "log.level", Value: strp("LOUD")}, "log.level"},
	} {
		err := alterBroker(ctx, adm, tc.id, tc.cfg)
		var ke *kerr.Error
		if !errors.As(err, &ke) || ke != kerr.InvalidRequest {
			t.Errorf("%s: %v, want INVALID_REQUEST", tc.cfg.Name, err)
			continue
		}
		resp, _ := adm.ValidateAlterBrokerConfigs(ctx, []kadm.AlterConfig{tc.cfg}, brokerIDs(tc.id)...)
		if len(resp) != 1 || !strings.Contains(resp[0].ErrMessage, tc.want) {
			t.Errorf("%s: message %+v, want %q", tc.cfg.Name, resp, tc.want)
		}
	}
	// Nothing refused was stored.
	if c, _ := brokerConfig(t, ctx, adm, 0, "log.retention.ms"); c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("a refused change was stored: %+v", c)
	}
	// Another broker's id is not this broker's to change.
	if err := alterBroker(ctx, adm, 7, kadm.AlterConfig{Name: "log.retention.ms", Value: strp("5")}); err == nil {
		t.Fatal("altering broker 7 on broker 0 succeeded")
	}
}

// readOnly is DescribeConfigs' ReadOnly flag of a config of broker 0.
func readOnly(t *testing.T, ctx context.Context, cl *kgo.Client, key string) bool {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, "0", []string{key}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != 1 {
		t.Fatalf("describe %s: %v %+v", key, err, resp)
	}
	return resp.Resources[0].Configs[0].ReadOnly
}

func brokerIDs(id int32) []int32 {
	if id < 0 {
		return nil
	}
	return []int32{id}
}

func TestDynamicLogLevel(t *testing.T) {
	b, out := startJSONLogBroker(t, "INFO")
	ctx := testCtx(t)
	adm, cl := newAdmin(t, b)
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(requestLines(t, out.String())); n != 0 {
		t.Fatalf("%d request lines at INFO", n)
	}
	if err := alterBroker(ctx, adm, 0, kadm.AlterConfig{Name: "log.level", Value: strp("debug")}); err != nil {
		t.Fatal(err)
	}
	if got := b.cfg.Logging.LevelVar.Level(); got != slog.LevelDebug {
		t.Fatalf("level %v after log.level=debug", got)
	}
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(requestLines(t, out.String())); n == 0 {
		t.Fatal("no request line after log.level=DEBUG")
	}
	if c, _ := brokerConfig(t, ctx, adm, 0, "log.level"); c.MaybeValue() != "debug" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("log.level: %+v", c)
	}
}
