package main

import (
	"strings"
	"testing"

	"github.com/kbroker/kbroker/broker/config"
)

func TestParseProperties(t *testing.T) {
	in := `# comment
! also a comment
broker.id=3
listeners = PLAINTEXT://127.0.0.1:9093
log.dirs: /tmp/a,\
   /tmp/b
num.partitions 4
message.max.bytes=2000
`
	p, err := parseProperties(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"broker.id":         "3",
		"listeners":         "PLAINTEXT://127.0.0.1:9093",
		"log.dirs":          "/tmp/a,/tmp/b",
		"num.partitions":    "4",
		"message.max.bytes": "2000",
	}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %q, want %q", k, p[k], v)
		}
	}
	if len(p) != len(want) {
		t.Errorf("got %d keys: %v", len(p), p)
	}
}

func TestParseArgsOverridesWin(t *testing.T) {
	p, err := parseArgs([]string{"--override", "num.partitions=7", "--override=log.dirs=/x"})
	if err != nil {
		t.Fatal(err)
	}
	if p["num.partitions"] != "7" || p["log.dirs"] != "/x" {
		t.Fatalf("got %v", p)
	}
	for _, bad := range [][]string{{"--override"}, {"--override", "novalue"}, {"--bogus"}, {"/does/not/exist.properties"}} {
		if _, err := parseArgs(bad); err == nil {
			t.Errorf("parseArgs(%q) succeeded", bad)
		}
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for key, val := range map[string]string{
		"num.partitions":            "many",
		"auto.create.topics.enable": "perhaps",
		"listeners":                 "nonsense",
		"log.segment.bytes":         "1",
		"message.max.bytes":         "-5",
	} {
		_, _, err := config.ParseConfig(map[string]string{key: val})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: error %v does not name the key", key, val, err)
		}
	}
	cfg, unknown, err := config.ParseConfig(map[string]string{"no.such.property": "x", "zookeeper.connect": "x:2181/kb", "log.roll.hours": "1", "log.roll.ms": "5000"})
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0] != "no.such.property" {
		t.Errorf("unknown = %v", unknown)
	}
	if !cfg.Cluster.Enabled() || cfg.Cluster.ZookeeperConnect != "x:2181/kb" {
		t.Errorf("zookeeper.connect: %+v", cfg.Cluster)
	}
	if cfg.LogRollMs != 5000 {
		t.Errorf("log.roll.ms should win over log.roll.hours, got %d", cfg.LogRollMs)
	}
	if cfg.NumPartitions != 1 || cfg.MessageMaxBytes != 1048588 || !cfg.AutoCreateTopics || cfg.Listeners[0].Port != 9092 {
		t.Errorf("defaults: %+v", cfg)
	}
}
