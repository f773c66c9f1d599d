package console

import (
	"encoding/json"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// throughputData is the counters the overview's panel turns into rates
// (console.js): totals since the broker started, at Time (ms).
type throughputData struct {
	Time       int64   `json:"time"`
	BytesIn    float64 `json:"bytesIn"`
	BytesOut   float64 `json:"bytesOut"`
	MessagesIn float64 `json:"messagesIn"`
	Requests   float64 `json:"requests"`
}

// sumThroughput reads the all-topics series (no topic label, or topic="")
// of Kafka's BrokerTopicMetrics and the sum of requests over every API.
func sumThroughput(families []*dto.MetricFamily) throughputData {
	var d throughputData
	for _, f := range families {
		var dst *float64
		allTopics := true
		switch f.GetName() {
		case "kafka_server_brokertopicmetrics_bytesin_total":
			dst = &d.BytesIn
		case "kafka_server_brokertopicmetrics_bytesout_total":
			dst = &d.BytesOut
		case "kafka_server_brokertopicmetrics_messagesin_total":
			dst = &d.MessagesIn
		case "kafka_network_requestmetrics_requests_total":
			dst, allTopics = &d.Requests, false
		default:
			continue
		}
		for _, m := range f.GetMetric() {
			if allTopics && topicLabel(m) != "" {
				continue
			}
			*dst += m.GetCounter().GetValue()
		}
	}
	return d
}

func topicLabel(m *dto.Metric) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == "topic" {
			return l.GetValue()
		}
	}
	return ""
}

func (c *Console) throughput(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Metrics == nil {
		http.NotFound(w, r)
		return
	}
	families, err := c.cfg.Metrics.Gather()
	if err != nil && len(families) == 0 {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	d := sumThroughput(families)
	d.Time = time.Now().UnixMilli()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(d)
}
