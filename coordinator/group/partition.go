package group

import "math"

// PartitionFor returns the __consumer_offsets partition that holds group:
// Kafka's Utils.abs(groupId.hashCode) % numPartitions, where hashCode is
// Java's String.hashCode over UTF-16 code units with int32 overflow and
// Utils.abs maps math.MinInt32 to 0. It returns 0 if numPartitions < 1.
func PartitionFor(group string, numPartitions int32) int32 {
	if numPartitions < 1 {
		return 0
	}
	h := javaStringHash(group)
	if h == math.MinInt32 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % numPartitions
}

// javaStringHash is java.lang.String.hashCode of s decoded from UTF-8. Each
// invalid UTF-8 byte counts as one U+FFFD; Java's decoder may fold some
// malformed sequences into fewer replacement characters, so group ids that
// are not valid UTF-8 can map differently than on a Kafka broker.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
