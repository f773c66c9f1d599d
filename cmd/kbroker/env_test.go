package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/broker/config"
)

func TestEnvKeyToProperty(t *testing.T) {
	for env, want := range map[string]string{
		"LOG_RETENTION_MS":               "log.retention.ms",
		"ADVERTISED_LISTENERS":           "advertised.listeners",
		"BROKER_ID":                      "broker.id",
		"ZOOKEEPER_CONNECT":              "zookeeper.connect",
		"LISTENER_SECURITY_PROTOCOL_MAP": "listener.security.protocol.map",
		"LISTENER_NAME_SASL__SSL_SCRAM___SHA___256_SASL_JAAS_CONFIG": "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config",
		"OFFSETS_TOPIC_REPLICATION_FACTOR":                           "offsets.topic.replication.factor",
	} {
		if got := envKeyToProperty(env); got != want {
			t.Errorf("%s -> %q, want %q", env, got, want)
		}
	}
}

func TestEnvProperties(t *testing.T) {
	p := envProperties([]string{
		"KAFKA_LOG_RETENTION_MS=60000",
		"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://kb1:9092,INTERNAL://kb1:29092",
		"KAFKA_HEAP_OPTS=-Xmx1G", // the JVM's, skipped
		"KAFKA_OPTS=-Dx=y",
		"CLUSTER_ID=MkU3OEVBNTcwNTJENDM2Qk",
		"PATH=/usr/bin",
		"KAFKA_=x",
		"broken",
	})
	want := map[string]string{
		"log.retention.ms":     "60000",
		"advertised.listeners": "PLAINTEXT://kb1:9092,INTERNAL://kb1:29092",
		"listeners":            "PLAINTEXT://0.0.0.0:9092,INTERNAL://0.0.0.0:29092",
		"cluster.id":           "MkU3OEVBNTcwNTJENDM2Qk",
	}
	if len(p) != len(want) {
		t.Fatalf("got %v, want %v", p, want)
	}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %q, want %q", k, p[k], v)
		}
	}
	// An explicit KAFKA_LISTENERS is not derived.
	p = envProperties([]string{"KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:9092", "KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://kb1:9092"})
	if p["listeners"] != "PLAINTEXT://127.0.0.1:9092" {
		t.Errorf("listeners = %q", p["listeners"])
	}
}

func TestParseArgsEnvConfig(t *testing.T) {
	env := []string{"KAFKA_NUM_PARTITIONS=3", "KAFKA_LOG_DIRS=/env"}
	// Not asked for: the environment is ignored.
	p, err := parseArgs(nil, env...)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 0 {
		t.Fatalf("environment read without --env-config: %v", p)
	}
	// --env-config: env over nothing, --override over env.
	p, err = parseArgs([]string{"--env-config", "--override", "log.dirs=/flag"}, env...)
	if err != nil {
		t.Fatal(err)
	}
	if p["num.partitions"] != "3" || p["log.dirs"] != "/flag" {
		t.Fatalf("got %v", p)
	}
	// KBROKER_ENV_CONFIG=true is the same as --env-config.
	p, err = parseArgs(nil, append(env, "KBROKER_ENV_CONFIG=true")...)
	if err != nil {
		t.Fatal(err)
	}
	if p["num.partitions"] != "3" {
		t.Fatalf("KBROKER_ENV_CONFIG ignored: %v", p)
	}
}

func TestLogLevelAndFormat(t *testing.T) {
	cfg, _, err := config.ParseConfig(map[string]string{"log.level": "debug", "log.format": "JSON"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log, lv := cfg.Logging.NewLogger(&buf)
	log.Debug("request", "api", "Produce")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON line: %q: %v", buf.String(), err)
	}
	if line["level"] != "DEBUG" || line["api"] != "Produce" {
		t.Errorf("line = %v", line)
	}
	// The level is live: raising it silences debug lines.
	lv.Set(slog.LevelWarn)
	buf.Reset()
	log.Info("quiet")
	if buf.Len() != 0 {
		t.Errorf("info logged at WARN: %q", buf.String())
	}
	// TRACE is below DEBUG and named TRACE.
	lv.Set(config.LevelTrace)
	log.Log(context.Background(), config.LevelTrace, "fine")
	if !strings.Contains(buf.String(), `"TRACE"`) {
		t.Errorf("trace line = %q", buf.String())
	}
	for _, bad := range []map[string]string{{"log.level": "loud"}, {"log.format": "xml"}} {
		if _, _, err := config.ParseConfig(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	cfg, _, _ = config.ParseConfig(nil)
	if cfg.Logging.Level != slog.LevelInfo || cfg.Logging.Format != "text" {
		t.Errorf("defaults: %+v", cfg.Logging)
	}
}

// TestContainerConfig parses the image's server.properties and a compose
// broker's environment as the container's entrypoint does
// (/kbroker /etc/kbroker/server.properties --env-config).
func TestContainerConfig(t *testing.T) {
	env := []string{
		"KAFKA_BROKER_ID=2",
		"KAFKA_ZOOKEEPER_CONNECT=zookeeper:2181",
		"KAFKA_LISTENERS=INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:29092",
		"KAFKA_ADVERTISED_LISTENERS=INTERNAL://kbroker2:9092,EXTERNAL://localhost:29092",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
		"KAFKA_INTER_BROKER_LISTENER_NAME=INTERNAL",
		"KAFKA_LOG_RETENTION_MS=60000",
		"KAFKA_HEAP_OPTS=-Xmx1G",
	}
	p, err := parseArgs([]string{"../../docker/server.properties", "--env-config"}, env...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, unknown, err := config.ParseConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 0 {
		t.Errorf("unknown keys %v", unknown)
	}
	if cfg.NodeID != 2 || cfg.LogRetentionMs != 60000 || cfg.LogDirs[0] != "/var/lib/kbroker" || !cfg.Cluster.Enabled() ||
		len(cfg.Listeners) != 2 || cfg.AdvertisedListeners[0].Host != "kbroker2" || cfg.InterBrokerListener().Name != "INTERNAL" ||
		len(cfg.HTTP.Listeners) != 1 || cfg.HTTP.Listeners[0].Port != 9644 {
		t.Fatalf("config: node %d retention %d dirs %v listeners %v advertised %v http %v", cfg.NodeID, cfg.LogRetentionMs, cfg.LogDirs,
			cfg.Listeners, cfg.AdvertisedListeners, cfg.HTTP.Listeners)
	}
	// Without environment the image's defaults stand.
	p, _ = parseArgs([]string{"../../docker/server.properties", "--env-config"})
	if cfg, _, err = config.ParseConfig(p); err != nil || cfg.Listeners[0].Port != 9092 || cfg.AdvertisedListeners[0].Host != "localhost" {
		t.Fatalf("defaults: %v %v", cfg.Listeners, err)
	}
}
