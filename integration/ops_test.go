package integration

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// httpAddrLine is the broker's log line naming its bound HTTP address.
var httpAddrLine = regexp.MustCompile(`http listening.*addr=(127\.0\.0\.1:\d+)`)

// metricValue scrapes one unlabelled gauge from broker b's /metrics (its
// HTTP listener on port 0, found in its log).
func metricValue(b *BrokerProc, name string) (float64, error) {
	m := httpAddrLine.FindAllStringSubmatch(b.Log(), -1)
	if len(m) == 0 {
		return 0, fmt.Errorf("broker %d has not logged its HTTP address", b.ID)
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get("http://" + m[len(m)-1][1] + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	io.Copy(io.Discard, resp.Body)
	return 0, fmt.Errorf("broker %d: no %s in /metrics", b.ID, name)
}

// checkControllerMetrics: exactly one broker reports itself the active
// controller, and that one counts the cluster's partitions with none offline.
func checkControllerMetrics(t *testing.T, bs []*BrokerProc, ctrl int32, partitions int) {
	t.Helper()
	waitFor(t, 30*time.Second, "one active controller in the metrics", func() (bool, error) {
		sum := 0.0
		for _, b := range bs {
			v, err := metricValue(b, "kafka_controller_kafkacontroller_activecontrollercount")
			if err != nil {
				return false, err
			}
			sum += v
			if b.ID == ctrl && v != 1 {
				return false, fmt.Errorf("controller %d reports activecontrollercount %v", b.ID, v)
			}
		}
		if sum != 1 {
			return false, fmt.Errorf("activecontrollercount sums to %v over the brokers", sum)
		}
		for _, b := range bs {
			if b.ID != ctrl {
				continue
			}
			if v, err := metricValue(b, "kafka_controller_kafkacontroller_offlinepartitionscount"); err != nil || v != 0 {
				return false, fmt.Errorf("offlinepartitionscount %v %v", v, err)
			}
			if v, err := metricValue(b, "kafka_controller_kafkacontroller_globalpartitioncount"); err != nil || int(v) < partitions {
				return false, fmt.Errorf("globalpartitioncount %v (want at least %d) %v", v, partitions, err)
			}
		}
		return true, nil
	})
}

// describeBrokerConfig returns one config of broker id as that broker
// describes it (value, source).
func describeBrokerConfig(b *BrokerProc, key string) (string, kmsg.ConfigSource, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(b.ID)), []string{key}
	req.Resources = append(req.Resources, rr)
	r, err := send(b.Addr(), req)
	if err != nil {
		return "", 0, err
	}
	res := r.(*kmsg.DescribeConfigsResponse).Resources
	if len(res) != 1 || res[0].ErrorCode != 0 || len(res[0].Configs) != 1 {
		return "", 0, fmt.Errorf("broker %d: describe %s: %+v", b.ID, key, res)
	}
	c := res[0].Configs[0]
	v := ""
	if c.Value != nil {
		v = *c.Value
	}
	return v, c.Source, nil
}

// checkDynamicDefaultPropagates sets a cluster-wide dynamic broker config
// through one broker and waits for every broker to report it as
// DYNAMIC_DEFAULT_BROKER_CONFIG: ZooKeeper's /config/brokers/<default> and
// the /config/changes notification reach them all, without a restart.
func checkDynamicDefaultPropagates(t *testing.T, bs []*BrokerProc) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	v := "3600000"
	c.Name, c.Op, c.Value = "log.retention.ms", kmsg.IncrementalAlterConfigOpSet, &v
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	r, err := send(bs[0].Addr(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res := r.(*kmsg.IncrementalAlterConfigsResponse).Resources; len(res) != 1 || res[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs of the cluster default: %+v", res)
	}
	waitFor(t, 30*time.Second, "the dynamic default on every broker", func() (bool, error) {
		for _, b := range bs {
			got, src, err := describeBrokerConfig(b, "log.retention.ms")
			if err != nil {
				return false, err
			}
			if got != v || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
				return false, fmt.Errorf("broker %d: log.retention.ms=%s from %v", b.ID, got, src)
			}
		}
		return true, nil
	})
}
