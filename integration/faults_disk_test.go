package integration

import (
	"strings"
	"testing"

	"github.com/kbroker/kbroker/integration/history"
)

// TestFaultsDisk runs TestFaultsNemesis's acks=all idempotent producer
// against three brokers (RF 3, min.insync.replicas=2) while a partition
// leader's disk turns slow, then full (cmd/kbroker's disk-fault hook,
// BrokerProc.SetDisk). Slow: produce goes on, slower. Full: as Kafka's,
// the leader takes its log dir offline on the first failed write, says so
// once, and halts, since it has no log dir left; its ZooKeeper session
// ends, the controller moves its leaderships to the ISR and produce goes
// on through the other brokers. Healing frees the space and restarts it
// (Kafka brings an offline log dir back only with a restart); it recovers
// its log and rejoins every ISR. At the end every acknowledged record is
// read back exactly once, at its offset, in order. The seed
// (KBROKER_FAULTS_SEED) picks the victims and hold times.
func TestFaultsDisk(t *testing.T) {
	if !inNetns(t) {
		return
	}
	seed, _, _ := faultsConfig(t)
	t.Logf("disk fault seed %d (replay: %s=%d)", seed, FaultsSeedEnv, seed)
	const topic = "disk"
	c := StartNetCluster(t, 3, 1, faultProps)
	waitClusterFormed(t, c.Brokers, 3)
	createTopic(t, c.Brokers[0].Addr(), topic, 3, 3, false)
	waitFullISR(t, c.Brokers, topic, 3)
	ch := history.New()
	p := startProducer(t, c.Brokers, topic, ch)
	p.waitAcked(t, 100, "records acknowledged before the first fault")

	nem := NewNemesis(c, seed, DiskFaults)
	stats := map[FaultKind]*faultStats{}
	injectAndHeal(t, c, nem, FaultSlowDisk, topic, workload{progress: ch.AckedCount}, stats)
	f := injectAndHeal(t, c, nem, FaultFullDisk, topic, workload{progress: ch.AckedCount}, stats)
	log := f.Broker.Log()
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "offline") || strings.Contains(line, "halting") || strings.Contains(line, "append failed") {
			t.Logf("broker %d: %s", f.Broker.ID, line)
		}
	}
	if n := strings.Count(log, "log dir taken offline"); n != 1 {
		t.Errorf("broker %d logged its log dir going offline %d times, want once", f.Broker.ID, n)
	}
	if n := strings.Count(log, "halting, as Kafka does"); n != 1 {
		t.Errorf("broker %d logged a halt %d times, want once (a full disk is a failed write: the dir goes offline and, with none left, the broker stops)", f.Broker.ID, n)
	}
	p.close(t)
	checkHistory(t, c.Brokers, topic, ch, "disk faults")
	t.Logf("seed %d disk faults:\n%s", seed, faultsTable(stats))
}
