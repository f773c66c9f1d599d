package group

import "testing"

// Expected values are Java's String.hashCode worked by hand (31*h + code
// unit, wrapped to int32), then Utils.abs and % n. "my-group" -> 12 and
// "kafka-txn-0" -> 30 of 50 agree with jshell output published by Strimzi
// users; "polygenelubricants" is the well-known string whose hashCode is
// Integer.MIN_VALUE, which Utils.abs maps to 0.
func TestPartitionFor(t *testing.T) {
	tests := []struct {
		group string
		n     int32
		hash  int32
		want  int32
	}{
		{"", 50, 0, 0},
		{"a", 50, 97, 47},
		{"ab", 50, 3105, 5},    // 97*31 + 98
		{"Aa", 50, 2112, 12},   // 65*31 + 97
		{"BB", 50, 2112, 12},   // 66*31 + 66: the classic collision
		{"é", 50, 233, 33},     // one UTF-16 unit, U+00E9
		{"😀", 50, 1772899, 49}, // surrogates D83D DE00: 55357*31 + 56832
		{"hello world", 50, 1794106052, 2},
		{"my-group", 50, -1906497762, 12},
		{"kafka-txn-0", 50, -1469191130, 30},
		{"my-group", 3, -1906497762, 0},
		{"polygenelubricants", 50, -2147483648, 0},
		{"a", 1, 97, 0},
		{"a", 0, 97, 0}, // invalid partition count: no panic
	}
	for _, tt := range tests {
		if h := javaStringHash(tt.group); h != tt.hash {
			t.Errorf("hashCode(%q) = %d, want %d", tt.group, h, tt.hash)
		}
		if got := PartitionFor(tt.group, tt.n); got != tt.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", tt.group, tt.n, got, tt.want)
		}
	}
}
