package config

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDynamicPrecedence(t *testing.T) {
	static, _, err := ParseConfig(map[string]string{"log.retention.hours": "2", "message.max.bytes": "5000", "log.segment.bytes": "2000000"})
	if err != nil {
		t.Fatal(err)
	}
	d := NewDynamic(static)
	if d.Current().LogRetentionMs != 2*3600_000 {
		t.Fatalf("static retention %d", d.Current().LogRetentionMs)
	}
	// The cluster default beats server.properties; this broker's override beats the default.
	c, err := d.Set(map[string]string{"message.max.bytes": "7000"}, map[string]string{"message.max.bytes": "6000", "log.retention.ms": "60000", "log.cleaner.delete.retention.ms": "5"})
	if err != nil {
		t.Fatal(err)
	}
	if c.MessageMaxBytes != 7000 || c.LogRetentionMs != 60000 || c.LogSegmentBytes != 2000000 {
		t.Fatalf("effective: max %d retention %d segment %d", c.MessageMaxBytes, c.LogRetentionMs, c.LogSegmentBytes)
	}
	if rc := ResolveTopicConfig(c, nil); rc.Values["delete.retention.ms"] != "5" || rc.Values["max.message.bytes"] != "7000" || rc.Values["retention.ms"] != "60000" {
		t.Fatalf("topic defaults: %v", rc.Values)
	}
	if d.Current().MessageMaxBytes != 7000 {
		t.Fatal("Set did not store")
	}
	// Dropping the overrides goes back to server.properties.
	c, _ = d.Set(nil, nil)
	if c.MessageMaxBytes != 5000 || c.LogRetentionMs != 2*3600_000 {
		t.Fatalf("after removing overrides: %d %d", c.MessageMaxBytes, c.LogRetentionMs)
	}
	// A bad value changes nothing and names the key.
	if _, err := d.Set(map[string]string{"log.retention.ms": "soon"}, nil); err == nil || !strings.Contains(err.Error(), "log.retention.ms") {
		t.Fatalf("bad value: %v", err)
	}
	if d.Current().LogRetentionMs != 2*3600_000 {
		t.Fatal("a refused change was applied")
	}
}

func TestDynamicStaticMsBeatsDynamicHours(t *testing.T) {
	static, _, _ := ParseConfig(map[string]string{"log.retention.ms": "1000"})
	d := NewDynamic(static)
	c, err := d.Set(map[string]string{"log.retention.hours": "5"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.LogRetentionMs != 1000 {
		t.Fatalf("log.retention.ms (static) should win over log.retention.hours (dynamic): %d", c.LogRetentionMs)
	}
}

func TestCheckDynamicBrokerConfigs(t *testing.T) {
	for _, tc := range []struct {
		names     []string
		perBroker bool
		want      string
	}{
		{[]string{"log.retention.ms", "num.io.threads", "log.level", "log.cleaner.threads"}, false, ""},
		{[]string{"listener.name.ssl.ssl.keystore.location"}, true, ""},
		{[]string{"log.dirs", "broker.id", "log.retention.ms"}, true, "Cannot update these configs dynamically: [broker.id, log.dirs]"},
		{[]string{"ssl.keystore.location"}, true, "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]"},
		{[]string{"listener.name.ssl.ssl.keystore.location"}, false, "Cannot update these configs at default cluster level, broker id must be specified: [listener.name.ssl.ssl.keystore.location]"},
	} {
		err := CheckDynamicBrokerConfigs(tc.names, tc.perBroker)
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.want {
				t.Errorf("%v: %q, want %q", tc.names, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%v accepted, want %q", tc.names, tc.want)
		}
	}
}

func TestDynamicSynonyms(t *testing.T) {
	static, _, _ := ParseConfig(map[string]string{"log.retention.hours": "2"})
	d := NewDynamic(static)
	if _, err := d.Set(map[string]string{"log.retention.ms": "100"}, map[string]string{"log.retention.minutes": "7"}); err != nil {
		t.Fatal(err)
	}
	got := d.Synonyms("log.retention.ms")
	want := []Synonym{
		{"log.retention.ms", "100", kmsg.ConfigSourceDynamicBrokerConfig},
		{"log.retention.minutes", "7", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{"log.retention.hours", "2", kmsg.ConfigSourceStaticBrokerConfig},
		{"log.retention.hours", "168", kmsg.ConfigSourceDefaultConfig},
	}
	if len(got) != len(want) {
		t.Fatalf("synonyms %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("synonym %d: %v, want %v", i, got[i], want[i])
		}
	}
	// Nothing set for log.retention.ms at any level: no synonym starts at it.
	if s := NewDynamic(static).Synonyms("log.retention.ms"); s != nil {
		t.Errorf("static only: %v", s)
	}
	if s := d.Synonyms("message.max.bytes"); len(s) != 1 || s[0].Source != kmsg.ConfigSourceDefaultConfig || s[0].Value != "1048588" {
		t.Errorf("message.max.bytes: %v", s)
	}
}
