package protocol

import "testing"

// TestIBP: the names Kafka accepts for inter.broker.protocol.version and
// the request versions its 3.x brokers derive from them
// (MetadataVersion.fetchRequestVersion and friends in Kafka 3.9).
func TestIBP(t *testing.T) {
	for _, tc := range []struct {
		in                    string
		want                  string
		fetch, list, lai, umd int16
	}{
		{"3.0", "3.0-IV1", 12, 7, 5, 7},
		{"3.0-IV0", "3.0-IV0", 12, 6, 5, 7},
		{"3.1", "3.1-IV0", 13, 7, 5, 7},
		{"3.2.3", "3.2-IV0", 13, 7, 6, 7},
		{"3.4", "3.4-IV0", 13, 7, 7, 8},
		{"3.5-IV0", "3.5-IV0", 14, 8, 7, 8},
		{"3.5", "3.5-IV2", 15, 8, 7, 8},
		{"3.7", "3.7-IV4", 16, 8, 7, 8},
		{"3.8", "3.8-IV0", 16, 8, 7, 8},
		{" 3.9 ", "3.9-IV0", 17, 9, 7, 8},
		{"3.9.1", "3.9-IV0", 17, 9, 7, 8},
	} {
		v, err := ParseIBP(tc.in)
		if err != nil {
			t.Errorf("ParseIBP(%q): %v", tc.in, err)
			continue
		}
		if v.String() != tc.want || v.FetchVersion() != tc.fetch || v.ListOffsetsVersion() != tc.list ||
			v.LeaderAndISRVersion() != tc.lai || v.UpdateMetadataVersion() != tc.umd {
			t.Errorf("%q: %s Fetch v%d ListOffsets v%d LeaderAndIsr v%d UpdateMetadata v%d, want %s v%d v%d v%d v%d", tc.in,
				v, v.FetchVersion(), v.ListOffsetsVersion(), v.LeaderAndISRVersion(), v.UpdateMetadataVersion(),
				tc.want, tc.fetch, tc.list, tc.lai, tc.umd)
		}
	}
	for _, bad := range []string{"", "2.8", "2.8-IV1", "3.10", "4.0", "3.5-IV9", "3.x"} {
		if v, err := ParseIBP(bad); err == nil {
			t.Errorf("ParseIBP(%q) = %s, want an error", bad, v)
		}
	}
	if var0 := IBP(0); var0.String() != DefaultIBP.String() || var0.FetchVersion() != DefaultIBP.FetchVersion() {
		t.Errorf("the zero IBP is %s, want the default %s", var0, DefaultIBP)
	}
	if DefaultIBP.FetchVersion() > supported[1].Max {
		t.Errorf("the default IBP sends Fetch v%d, above what kbroker accepts", DefaultIBP.FetchVersion())
	}
}
