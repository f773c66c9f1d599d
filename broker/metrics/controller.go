package metrics

import "github.com/prometheus/client_golang/prometheus"

// ControllerStats is what the controller metrics report, read at scrape
// time. As in Kafka, only the active controller reports the cluster-wide
// counts; every other broker reports zeros.
type ControllerStats struct {
	// Active is whether this broker is the active controller.
	Active bool
	// OfflinePartitions are the partitions with no leader (all replicas
	// down, or no ISR member left and unclean election off).
	OfflinePartitions int
	// GlobalPartitions and GlobalTopics count the whole cluster.
	GlobalPartitions, GlobalTopics int
}

var (
	descActiveController = prometheus.NewDesc("kafka_controller_kafkacontroller_activecontrollercount",
		"1 on the active controller, 0 elsewhere: the sum over the brokers is 1 in a healthy cluster.", nil, nil)
	descOfflinePartitions = prometheus.NewDesc("kafka_controller_kafkacontroller_offlinepartitionscount",
		"Partitions without a leader (reported by the active controller).", nil, nil)
	descGlobalPartitions = prometheus.NewDesc("kafka_controller_kafkacontroller_globalpartitioncount",
		"Partitions in the cluster (reported by the active controller).", nil, nil)
	descGlobalTopics = prometheus.NewDesc("kafka_controller_kafkacontroller_globaltopiccount",
		"Topics in the cluster (reported by the active controller).", nil, nil)
)

// controllerCollector reports Sources.Controller.
type controllerCollector struct{ src *Sources }

// Describe implements prometheus.Collector.
func (c *controllerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descActiveController, descOfflinePartitions, descGlobalPartitions, descGlobalTopics} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. Nothing is reported before the
// broker is ready (the controller starts last) or without a source.
func (c *controllerCollector) Collect(ch chan<- prometheus.Metric) {
	if c.src.Controller == nil || (c.src.Ready != nil && !c.src.Ready()) {
		return
	}
	s := c.src.Controller()
	active := 0.0
	if s.Active {
		active = 1
	}
	for _, m := range []struct {
		d *prometheus.Desc
		v float64
	}{{descActiveController, active}, {descOfflinePartitions, float64(s.OfflinePartitions)},
		{descGlobalPartitions, float64(s.GlobalPartitions)}, {descGlobalTopics, float64(s.GlobalTopics)}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, m.v)
	}
}
