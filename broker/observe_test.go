package broker

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/broker/config"
)

// TestReadyzFollowsStartAndClose: the HTTP listener answers from New on;
// /readyz is 503 until Start has opened the Kafka listeners, 200 then, and
// the state metrics appear only once ready.
func TestReadyzFollowsStartAndClose(t *testing.T) {
	cfg, _, err := config.ParseConfig(map[string]string{
		"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "http.listeners": "http://127.0.0.1:0", "schema.registry.listeners": "", "rest.proxy.listeners": "",
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := hc.Get("http://" + b.HTTPAddrs()[0].String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz before Start: %d", code)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before Start: %d, want 503", code)
	}
	if _, body := get("/metrics"); strings.Contains(body, "kafka_server_replicamanager_partitioncount") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics before Start: partition state shown or Go collector missing:\n%s", body)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after Start: %d, want 200", code)
	}
	if _, body := get("/metrics"); !strings.Contains(body, "kafka_server_replicamanager_partitioncount 0") {
		t.Errorf("/metrics after Start lacks the partition count:\n%s", body)
	}
	// A single node is its own controller.
	_, body := get("/metrics")
	for _, want := range []string{"kafka_controller_kafkacontroller_activecontrollercount 1", "kafka_controller_kafkacontroller_offlinepartitionscount 0",
		"kafka_controller_kafkacontroller_globaltopiccount 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics after Start lacks %q", want)
		}
	}
}
