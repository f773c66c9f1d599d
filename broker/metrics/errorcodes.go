package metrics

import "github.com/twmb/franz-go/pkg/kmsg"

// ErrorCodes returns every non-zero error code in resp (the top level and
// each topic, partition or group) with how often it occurs, for the request
// log; nil when there is none.
func ErrorCodes(resp kmsg.Response) map[int16]int {
	if resp == nil {
		return nil
	}
	counts := map[int16]int{}
	errorCodes(resp, counts)
	delete(counts, 0)
	if len(counts) == 0 {
		return nil
	}
	return counts
}
