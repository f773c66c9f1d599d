package config

import "testing"

// TestDeleteDelayKeys checks where the log dir's delete delay comes from:
// Kafka's broker key log.segment.delete.delay.ms, or kbroker's older
// file.delete.delay.ms, which wins when set; Kafka's 0 is kept as 1.
func TestDeleteDelayKeys(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  int64
	}{
		{map[string]string{}, 60000},
		{map[string]string{"log.segment.delete.delay.ms": "1000"}, 1000},
		{map[string]string{"log.segment.delete.delay.ms": "0"}, 1},
		{map[string]string{"file.delete.delay.ms": "1500"}, 1500},
		{map[string]string{"log.segment.delete.delay.ms": "1000", "file.delete.delay.ms": "5"}, 5},
	} {
		cfg, unknown, err := ParseConfig(c.props)
		if err != nil || len(unknown) > 0 {
			t.Fatalf("%v: %v (unknown %v)", c.props, err, unknown)
		}
		if cfg.FileDeleteDelayMs != c.want {
			t.Errorf("%v: delete delay %d ms, want %d", c.props, cfg.FileDeleteDelayMs, c.want)
		}
	}
}
