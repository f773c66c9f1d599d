package compat

// Producer ids in a mixed cluster (issue 24, KIP-730): at
// inter.broker.protocol.version 3.0-IV0 and later a broker, Kafka 3.9 or
// kbroker, takes its producer id blocks from the controller with
// AllocateProducerIds, and the controller claims them in
// /latest_producer_id_block. Both kinds must hand out ids from blocks
// that never overlap, whichever kind is the controller.

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/kbroker/kbroker/integration"
)

// initProducerID sends a non-transactional InitProducerId to broker id
// through the client of addr, retrying the retriable errors (a Kafka
// broker answers COORDINATOR_LOAD_IN_PROGRESS while its first block is on
// the way), and returns the producer id.
func initProducerID(t *testing.T, addr string, id int32) int64 {
	t.Helper()
	cl := newKgo(t, addr)
	var last error
	for deadline := time.Now().Add(opTimeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionTimeoutMillis = 60000
		resp, err := req.RequestWith(testCtx(t), cl.Broker(int(id)))
		if err != nil {
			last = err // no answer yet
			continue
		}
		switch err := kerr.ErrorForCode(resp.ErrorCode); {
		case err == nil && resp.ProducerID >= 0:
			return resp.ProducerID
		case err == nil:
			t.Fatalf("InitProducerId answered by broker %d: producer id %d", id, resp.ProducerID)
		case kerr.IsRetriable(err):
			last = err
		default:
			t.Fatalf("InitProducerId answered by broker %d: %v", id, err)
		}
	}
	t.Fatalf("InitProducerId answered by broker %d: no producer id after %v, last: %v", id, opTimeout, last)
	return -1
}

// TestKafka39ProducerIDsUnderKbrokerController: a Kafka 3.9 broker under
// a kbroker controller gets producer ids. Both brokers' InitProducerId
// need a block from the controller (AllocateProducerIds v0, which
// kbroker's controller answers with the next block of
// /latest_producer_id_block, claimed for the asking broker). The two ids
// differ and each lies in its broker's block.
func TestKafka39ProducerIDsUnderKbrokerController(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 and a kbroker broker")
	}
	const chroot = "/mixed-pids"
	z := integration.StartZooKeeper(t)
	ctrl := startKbrokerController(t, z, chroot)
	kf := startKafka39With(t, z, chroot, 2, t.TempDir(), nil)
	waitViews(t, "both brokers registered", "controller 1 brokers [1 2]", []string{ctrl.Addr(), kf.Addr()})

	kbPID := initProducerID(t, ctrl.Addr(), 1)
	kfPID := initProducerID(t, kf.Addr(), 2)
	t.Logf("producer ids: %d from kbroker broker 1, %d from Kafka broker 2", kbPID, kfPID)
	if kbPID == kfPID {
		t.Fatalf("both brokers handed out producer id %d", kfPID)
	}
	// kbroker's controller logs each block it gives a broker.
	block := func(broker int32) (start, end int64) {
		t.Helper()
		re := regexp.MustCompile(fmt.Sprintf(`msg=AllocateProducerIds broker=%d block_start=(\d+) block_end=(\d+)`, broker))
		m := re.FindStringSubmatch(ctrl.Log())
		if m == nil {
			t.Fatalf("kbroker's controller handed broker %d no producer id block:\n%s", broker, grepLines(ctrl.Log(), "AllocateProducerIds"))
		}
		start, _ = strconv.ParseInt(m[1], 10, 64)
		end, _ = strconv.ParseInt(m[2], 10, 64)
		return start, end
	}
	kbStart, kbEnd := block(1)
	start, end := block(2)
	if kfPID < start || kfPID > end {
		t.Errorf("Kafka's producer id %d is not in the block [%d, %d] kbroker's controller gave it", kfPID, start, end)
	}
	if kbPID < kbStart || kbPID > kbEnd {
		t.Errorf("kbroker's producer id %d is not in the block [%d, %d] its controller gave it", kbPID, kbStart, kbEnd)
	}
	if kbStart <= end && start <= kbEnd {
		t.Errorf("the blocks overlap: [%d, %d] for kbroker, [%d, %d] for Kafka", kbStart, kbEnd, start, end)
	}
	zkc := dialRollingZK(t, z, chroot)
	data, _, err := zkc.Get(zkdata.ProducerIDBlockPath)
	if err != nil {
		t.Fatal(err)
	}
	last, err := zkdata.DecodeProducerIDBlock(data)
	if err != nil {
		t.Fatal(err)
	}
	if last.BlockEnd < end || last.BlockEnd < kbPID {
		t.Errorf("%s is %+v, before blocks handed out (Kafka's ends at %d, kbroker's id %d)", zkdata.ProducerIDBlockPath, last, end, kbPID)
	}
}

// TestKafka39ProducerIDsUnderKafkaController: a kbroker broker under a
// Kafka 3.9 controller asks it for its producer id block with
// AllocateProducerIds, as a Kafka broker at IBP 3.9 does, and Kafka's
// controller claims the block for it (and logs so); the Kafka broker's
// own id comes from another block.
func TestKafka39ProducerIDsUnderKafkaController(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 and a kbroker broker")
	}
	const chroot = "/mixed-pids-kafka"
	z := integration.StartZooKeeper(t)
	kf := startKafka39With(t, z, chroot, 1, t.TempDir(), nil)
	kb := startKbrokerID(t, z, chroot, 2, nil)
	waitViews(t, "both brokers registered", "controller 1 brokers [1 2]", []string{kf.Addr(), kb.Addr()})

	kbPID := initProducerID(t, kb.Addr(), 2)
	kfPID := initProducerID(t, kf.Addr(), 1)
	t.Logf("producer ids: %d from kbroker broker 2, %d from Kafka broker 1", kbPID, kfPID)
	if kbPID == kfPID {
		t.Fatalf("both brokers handed out producer id %d", kbPID)
	}
	// Kafka's controller (ZkProducerIdManager) logs every block it claims.
	re := regexp.MustCompile(`Acquired new producerId block ProducerIdsBlock\(assignedBrokerId=2, firstProducerId=(\d+), size=(\d+)\)`)
	m := re.FindStringSubmatch(kf.out.String())
	if m == nil {
		t.Fatalf("Kafka's controller claimed no producer id block for kbroker broker 2:\n%s", grepLines(kf.out.String(), "producerId"))
	}
	first, _ := strconv.ParseInt(m[1], 10, 64)
	size, _ := strconv.ParseInt(m[2], 10, 64)
	if kbPID < first || kbPID >= first+size {
		t.Errorf("kbroker's producer id %d is not in the block [%d, %d) Kafka's controller claimed for it", kbPID, first, first+size)
	}
	if kfPID >= first && kfPID < first+size {
		t.Errorf("Kafka's producer id %d is in kbroker's block [%d, %d)", kfPID, first, first+size)
	}
}
