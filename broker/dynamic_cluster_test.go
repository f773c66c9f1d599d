package broker

import "testing"

// TestNewestChange: the applied position never moves back, also when the
// notifications expired (an empty list), and starts before every
// notification when there was none.
func TestNewestChange(t *testing.T) {
	for _, c := range []struct {
		changes    []string
		seen, want string
	}{
		{nil, "", "config_change_"},
		{[]string{"config_change_0000000003", "config_change_0000000007"}, "", "config_change_0000000007"},
		{nil, "config_change_0000000007", "config_change_0000000007"},
		{[]string{"config_change_0000000005"}, "config_change_0000000007", "config_change_0000000007"},
		{[]string{"config_change_0000000009"}, "config_change_0000000007", "config_change_0000000009"},
		{nil, "config_change_", "config_change_"},
	} {
		if got := newestChange(c.changes, c.seen); got != c.want {
			t.Errorf("newestChange(%v, %q) = %q, want %q", c.changes, c.seen, got, c.want)
		}
	}
}
