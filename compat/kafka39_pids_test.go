package compat

// Producer ids in a mixed cluster (issue 24, KIP-730): a Kafka 3.9 broker
// at inter.broker.protocol.version 3.9 takes its producer id blocks from
// the controller with AllocateProducerIds; kbroker's brokers claim theirs
// in /latest_producer_id_block. Both kinds must hand out ids from blocks
// that never overlap, whichever kind is the controller.

import (
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
// a kbroker controller gets producer ids. Kafka's InitProducerId needs a
// block from the controller (AllocateProducerIds v0, which kbroker's
// controller answers with the next block of /latest_producer_id_block,
// claimed for the Kafka broker); the kbroker broker claims its own block
// in ZooKeeper. The two ids differ and each lies in its broker's block.
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
	// kbroker's controller logs each block it gives a Kafka broker.
	m := regexp.MustCompile(`msg=AllocateProducerIds broker=2 block_start=(\d+) block_end=(\d+)`).FindStringSubmatch(ctrl.Log())
	if m == nil {
		t.Fatalf("kbroker's controller handed Kafka no producer id block:\n%s", grepLines(ctrl.Log(), "AllocateProducerIds"))
	}
	start, _ := strconv.ParseInt(m[1], 10, 64)
	end, _ := strconv.ParseInt(m[2], 10, 64)
	if kfPID < start || kfPID > end {
		t.Errorf("Kafka's producer id %d is not in the block [%d, %d] kbroker's controller gave it", kfPID, start, end)
	}
	if kbPID >= start && kbPID <= end {
		t.Errorf("kbroker's producer id %d is in Kafka's block [%d, %d]", kbPID, start, end)
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
