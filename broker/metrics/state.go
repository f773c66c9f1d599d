package metrics

import (
	"strconv"
	"time"

	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stateCollector reads the broker's state at scrape time: nothing is
// counted on a hot path for these, and a scrape sees the state as it is.
type stateCollector struct {
	src *Sources
}

var (
	descPartitionCount = prometheus.NewDesc("kafka_server_replicamanager_partitioncount",
		"Partitions this broker hosts (leaders and followers, internal topics included).", nil, nil)
	descLeaderCount = prometheus.NewDesc("kafka_server_replicamanager_leadercount",
		"Partitions this broker leads.", nil, nil)
	descUnderReplicated = prometheus.NewDesc("kafka_server_replicamanager_underreplicatedpartitions",
		"Partitions this broker leads whose ISR is smaller than their replica set.", nil, nil)
	descLogSize = prometheus.NewDesc("kafka_log_log_size",
		"Bytes of a partition's segment files.", []string{"topic", "partition"}, nil)
	descLogEnd = prometheus.NewDesc("kafka_log_log_logendoffset",
		"A partition's log end offset.", []string{"topic", "partition"}, nil)
	descLogStart = prometheus.NewDesc("kafka_log_log_logstartoffset",
		"A partition's log start offset.", []string{"topic", "partition"}, nil)
	descGroupOffset = prometheus.NewDesc("kafka_consumergroup_current_offset",
		"A group's committed offset of a partition (kafka_exporter's name).", []string{"consumergroup", "topic", "partition"}, nil)
	descGroupLag = prometheus.NewDesc("kafka_consumergroup_lag",
		"High watermark minus the group's committed offset, read at scrape time (kafka_exporter's name).", []string{"consumergroup", "topic", "partition"}, nil)
	descConnections = prometheus.NewDesc("kafka_server_socket_server_metrics_connection_count",
		"Open client connections, by listener.", []string{"listener"}, nil)
	descHandlerPanics = prometheus.NewDesc("kbroker_network_handler_panics_total",
		"Request handler panics recovered (each answered with UNKNOWN_SERVER_ERROR or a closed connection).", nil, nil)
	descQueuedBytes = prometheus.NewDesc("kbroker_network_queued_request_bytes",
		"Bytes of request frames read and not yet answered (the used part of queued.max.request.bytes).", nil, nil)
	descDecodedBytes = prometheus.NewDesc("kbroker_network_decoded_request_bytes",
		"Memory held by decoded requests not yet answered.", nil, nil)
	descTimerPanics = prometheus.NewDesc("kbroker_coordinator_timer_panics_total",
		"Coordinator timer panics recovered.", nil, nil)
	descTaskPanics = prometheus.NewDesc("kbroker_log_task_panics_total",
		"Background log task (retention, cleaner) panics recovered.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPartitionCount, descLeaderCount, descUnderReplicated, descLogSize, descLogEnd,
		descLogStart, descGroupOffset, descGroupLag, descConnections, descHandlerPanics, descQueuedBytes, descDecodedBytes,
		descTimerPanics, descTaskPanics} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	loaded := c.src.Ready == nil || c.src.Ready()
	if rm := c.src.Replicas; rm != nil {
		if loaded {
			c.collectPartitions(gauge)
		}
		counter(descTaskPanics, float64(rm.TaskPanics()))
	}
	if n := c.src.Network; n != nil {
		for l, count := range n.ConnectionCounts() {
			gauge(descConnections, float64(count), l)
		}
		counter(descHandlerPanics, float64(n.HandlerPanics()))
		gauge(descQueuedBytes, float64(n.QueuedRequestBytes()))
		gauge(descDecodedBytes, float64(n.DecodedRequestBytes()))
	}
	if h := c.src.Groups; h != nil {
		counter(descTimerPanics, float64(h.TimerPanics()))
		if c.src.Replicas != nil && loaded {
			c.collectLag(gauge)
		}
	}
}

func (c *stateCollector) collectPartitions(gauge func(*prometheus.Desc, float64, ...string)) {
	var parts, leaders, under int
	for _, t := range c.src.Replicas.Topics() {
		for _, p := range t.Partitions {
			if p == nil || !p.Hosted() {
				continue
			}
			parts++
			if p.IsLeader() {
				leaders++
				if st, clustered := p.State(); clustered && len(p.ISR()) < len(st.Replicas) {
					under++
				}
			}
			labels := []string{t.Meta.Name, strconv.Itoa(int(p.Index))}
			gauge(descLogSize, float64(p.Log.Size()), labels...)
			gauge(descLogEnd, float64(p.Log.LogEndOffset()), labels...)
			gauge(descLogStart, float64(p.Log.LogStartOffset()), labels...)
		}
	}
	gauge(descPartitionCount, float64(parts))
	gauge(descLeaderCount, float64(leaders))
	gauge(descUnderReplicated, float64(under))
}

// groupsTopic is where committed offsets live; until it exists no group
// has committed, and a scrape must not create it.
const groupsTopic = "__consumer_offsets"

// lagWait bounds how long a scrape waits for the group coordinator's
// answers (immediate on a single node; a cluster acknowledges on
// replication).
const lagWait = 5 * time.Second

// collectLag asks the group coordinator, as a client would (ListGroups,
// then OffsetFetch of every group), for the committed offsets and reports
// each with its lag behind the partition's high watermark.
func (c *stateCollector) collectLag(gauge func(*prometheus.Desc, float64, ...string)) {
	rm := c.src.Replicas
	if rm.TopicByName(groupsTopic) == nil {
		return
	}
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 4
	lresp, ok := c.groupCall(lreq).(*kmsg.ListGroupsResponse)
	if !ok || lresp.ErrorCode != 0 || len(lresp.Groups) == 0 {
		return
	}
	oreq := kmsg.NewPtrOffsetFetchRequest()
	oreq.Version = 8
	for _, g := range lresp.Groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g.Group
		oreq.Groups = append(oreq.Groups, rg)
	}
	oresp, ok := c.groupCall(oreq).(*kmsg.OffsetFetchResponse)
	if !ok {
		return
	}
	for _, g := range oresp.Groups {
		if g.ErrorCode != 0 {
			continue
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 || p.Offset < 0 {
					continue
				}
				labels := []string{g.Group, t.Topic, strconv.Itoa(int(p.Partition))}
				gauge(descGroupOffset, float64(p.Offset), labels...)
				if part := rm.PartitionOf(t.Topic, p.Partition); part != nil {
					gauge(descGroupLag, float64(max(part.HighWatermark()-p.Offset, 0)), labels...)
				}
			}
		}
	}
}

// scrapeClient is who the coordinator sees asking.
var scrapeClient = group.Client{ID: "kbroker-metrics", Host: "127.0.0.1"}

// groupCall sends one request to the group coordinator and waits (bounded)
// for its answer; nil when there is none.
func (c *stateCollector) groupCall(req kmsg.Request) kmsg.Response {
	tok := make(coordhost.Token, 1)
	if err := c.src.Groups.GroupRequest(scrapeClient, req, tok); err != nil {
		return nil
	}
	timer := time.NewTimer(lagWait)
	defer timer.Stop()
	select {
	case resp := <-tok:
		return resp
	case <-timer.C:
		return nil
	}
}
