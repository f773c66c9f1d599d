package zkstore

import "testing"

// Quota values are written as Kafka writes them: LONG quotas as integers,
// DOUBLE ones as Java's Double.toString.
func TestFormatQuota(t *testing.T) {
	for _, c := range []struct {
		key  string
		v    float64
		want string
	}{
		{"producer_byte_rate", 1048576, "1048576"},
		{"consumer_byte_rate", 2048, "2048"},
		{"request_percentage", 50, "50.0"},
		{"request_percentage", 12.5, "12.5"},
		{"controller_mutation_rate", 0.25, "0.25"},
	} {
		if got := formatQuota(c.key, c.v); got != c.want {
			t.Errorf("%s=%v: %q, want %q", c.key, c.v, got, c.want)
		}
	}
}
