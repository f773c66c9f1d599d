package config

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// QuotaConfig is how client quotas are measured (Kafka's names and
// defaults); the quotas themselves are set with AlterClientQuotas and kept
// with the metadata.
type QuotaConfig struct {
	// QuotaWindowNum is quota.window.num: the windows a rate spans.
	QuotaWindowNum int
	// QuotaWindowSizeSeconds is quota.window.size.seconds: each window's length.
	QuotaWindowSizeSeconds int
}

var quotaProps = map[string]prop{
	"quota.window.num": {"11", kmsg.ConfigTypeInt, "The number of samples to retain in memory for client quotas.",
		intProp(func(c *Config, v int64) { c.QuotaWindowNum = int(v) }, 1, math.MaxInt32)},
	"quota.window.size.seconds": {"1", kmsg.ConfigTypeInt, "The time span of each sample for client quotas.",
		intProp(func(c *Config, v int64) { c.QuotaWindowSizeSeconds = int(v) }, 1, math.MaxInt32)},
}

func init() {
	for k, p := range quotaProps {
		props[k] = p
	}
}
