package zkcontroller

import (
	"errors"
	"fmt"
	"sort"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handle runs one watch event of the active controller.
func (c *Controller) handle(ev event) error {
	switch ev.kind {
	case evBrokers:
		live, err := c.readBrokers()
		if err != nil {
			return err
		}
		old := make(map[int32]controller.LiveBroker, len(c.machine.Ctx.Live))
		for id, b := range c.machine.Ctx.Live {
			old[id] = b
		}
		out, err := c.machine.OnBrokerChange(live)
		if err != nil {
			return err
		}
		c.syncChannel(old)
		return c.perform(out)
	case evTopics:
		names, err := c.topicNames()
		if err != nil {
			return err
		}
		var fresh []string
		for _, n := range names {
			if _, known := c.machine.Ctx.Topics[n]; !known {
				fresh = append(fresh, n)
			}
		}
		return c.topicsChanged(fresh)
	case evTopic:
		if _, known := c.machine.Ctx.Topics[ev.path]; known {
			return c.topicsChanged([]string{ev.path})
		}
	case evDelete:
		names, err := c.deletionQueue()
		if err != nil {
			return err
		}
		return c.perform(c.machine.OnTopicDeletion(names))
	case evISR:
		return c.handleISRChanges()
	case evLogDir:
		return c.handleLogDirEvents(true)
	}
	return nil
}

// topicsChanged reads the assignments of names (new topics, or known ones
// whose partitions changed), pipelined, and decides them in one
// Machine.OnTopicChanges; a topic whose znode is gone is left out.
func (c *Controller) topicsChanged(names []string) error {
	as, errs := c.readTopics(names)
	var added []string
	var found []zkdata.TopicAssignment
	for i, n := range names {
		if errors.Is(errs[i], zk.ErrNoNode) {
			continue
		}
		if errs[i] != nil {
			return errs[i]
		}
		added, found = append(added, n), append(found, as[i])
	}
	if len(added) == 0 {
		return nil
	}
	out, err := c.machine.OnTopicChanges(added, found)
	if err != nil {
		return err
	}
	return c.perform(out)
}

// perform sends a decision's requests and deletes the topics it finished.
func (c *Controller) perform(out controller.Output) error {
	for _, p := range out.Problems {
		c.log.Warn("controller", "problem", p)
	}
	c.send(out.Sends)
	for _, n := range out.DeletedTopics {
		if err := c.zk.DeleteRecursive(zkdata.TopicPath(n)); err != nil {
			return fmt.Errorf("deleting topic %s: %w", n, err)
		}
		if err := c.zk.Delete(zkdata.TopicConfigPath(n), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("deleting topic %s config: %w", n, err)
		}
		if err := c.zk.Delete(zkdata.DeleteTopicPath(n), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("deleting topic %s marker: %w", n, err)
		}
		delete(c.configs, n)
		c.log.Info("deleted topic", "topic", n)
	}
	return nil
}

// send queues a decision's requests. This broker's own UpdateMetadata
// (and what follows it for this broker) leaves only once the other brokers
// answered theirs (Channel.SendAfter, bounded by GateTimeout): a client
// sends CreateTopics, CreatePartitions and DeleteTopics to the controller,
// which answers once its own metadata shows the result (broker/api's
// admin waits), so by then every live broker shows it too, and the
// client's next request finds it on whichever broker it asks.
func (c *Controller) send(sends []controller.Send) {
	self := c.cfg.BrokerID
	var deferred []controller.Send
	var others []int32
	for _, s := range sends {
		_, um := s.Req.(*kmsg.UpdateMetadataRequest)
		switch {
		case s.Broker == self && (um || len(deferred) > 0):
			deferred = append(deferred, s)
		default:
			c.channel.Send(s.Broker, s.Req)
			if um {
				others = append(others, s.Broker)
			}
		}
	}
	for i, s := range deferred {
		if i == 0 {
			c.channel.SendAfter(s.Broker, s.Req, others)
			continue
		}
		c.channel.Send(s.Broker, s.Req)
	}
}

// syncChannel gives the channel a queue for every live broker and drops
// those of brokers no longer live or registered anew (old: the previous
// live set), so nothing queued for a previous incarnation is delivered.
func (c *Controller) syncChannel(old map[int32]controller.LiveBroker) {
	live := c.machine.Ctx.Live
	for id, was := range old {
		if now, ok := live[id]; !ok || now.Epoch != was.Epoch {
			c.channel.RemoveBroker(id)
		}
	}
	for id, b := range live {
		if ep, ok := b.Registration.Endpoint(c.cfg.Listener); ok {
			c.channel.AddBroker(id, hostPort(ep.Host, ep.Port))
		} else {
			c.log.Warn("broker has no inter-broker endpoint", "broker", id, "listener", c.cfg.Listener)
		}
	}
}

func (c *Controller) readBrokers() (map[int32]controller.LiveBroker, error) {
	children, _, ch, err := c.zk.ChildrenW(zkdata.BrokerIDsPath)
	if err != nil {
		return nil, fmt.Errorf("listing brokers: %w", err)
	}
	if !c.isArmed(evBrokers, "") {
		c.watch(evBrokers, "", ch)
	}
	live := map[int32]controller.LiveBroker{}
	for _, child := range children {
		id, err := zkdata.ParseBrokerID(child)
		if err != nil {
			continue
		}
		data, stat, err := c.zk.Get(zkdata.BrokerPath(id))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading broker %d: %w", id, err)
		}
		reg, err := zkdata.DecodeBrokerRegistration(id, data)
		if err != nil {
			c.log.Warn("ignoring broker registration", "err", err)
			continue
		}
		live[id] = controller.LiveBroker{Registration: reg, Epoch: stat.Czxid}
	}
	return live, nil
}

func (c *Controller) topicNames() ([]string, error) {
	names, _, ch, err := c.zk.ChildrenW(zkdata.TopicsPath)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	if !c.isArmed(evTopics, "") {
		c.watch(evTopics, "", ch)
	}
	sort.Strings(names)
	return names, nil
}

// readTopics reads each topic's assignment with a watch (for added
// partitions) and its config overrides, the reads pipelined; the results
// are in the order of names. The watches are armed here, on the loop's
// goroutine.
func (c *Controller) readTopics(names []string) ([]zkdata.TopicAssignment, []error) {
	type result struct {
		data []byte
		ch   <-chan zk.Event
		cfg  map[string]string
		err  error
	}
	res := make([]result, len(names))
	zkclient.Pipeline(len(names), func(i int) {
		r := &res[i]
		if r.data, _, r.ch, r.err = c.zk.GetW(zkdata.TopicPath(names[i])); r.err != nil {
			return
		}
		r.cfg, r.err = c.zk.TopicConfig(names[i])
	})
	as, errs := make([]zkdata.TopicAssignment, len(names)), make([]error, len(names))
	for i, name := range names {
		r := res[i]
		if r.ch != nil && !c.isArmed(evTopic, name) {
			c.watch(evTopic, name, r.ch)
		}
		if errs[i] = r.err; r.err != nil {
			continue
		}
		c.configs[name] = r.cfg
		as[i], errs[i] = zkdata.DecodeTopicAssignment(name, r.data)
	}
	return as, errs
}

func (c *Controller) unclean(topic string) bool {
	if v, ok := c.configs[topic]["unclean.leader.election.enable"]; ok {
		return v == "true"
	}
	return c.cfg.UncleanLeaderElection
}

func (c *Controller) deletionQueue() ([]string, error) {
	names, _, ch, err := c.zk.ChildrenW(zkdata.DeleteTopicsPath)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", zkdata.DeleteTopicsPath, err)
	}
	if !c.isArmed(evDelete, "") {
		c.watch(evDelete, "", ch)
	}
	sort.Strings(names)
	return names, nil
}

// handleISRChanges reads and deletes the pending ISR change notifications
// and lets the machine re-read those partitions.
func (c *Controller) handleISRChanges() error {
	names, _, ch, err := c.zk.ChildrenW(zkdata.IsrChangePath)
	if err != nil {
		return fmt.Errorf("listing ISR changes: %w", err)
	}
	if !c.isArmed(evISR, "") {
		c.watch(evISR, "", ch)
	}
	sort.Strings(names)
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = zkdata.IsrChangePath + "/" + n
	}
	seen := map[controller.TopicPartition]bool{}
	var tps []controller.TopicPartition
	for i, r := range c.zk.GetMany(paths) {
		if r.Err != nil {
			continue
		}
		changed, derr := zkdata.DecodeIsrChange(r.Data)
		if derr != nil {
			c.log.Warn("ignoring ISR change notification", "znode", names[i], "err", derr)
		}
		for _, tp := range changed {
			if !seen[tp] {
				seen[tp] = true
				tps = append(tps, tp)
			}
		}
	}
	errs := make([]error, len(paths))
	zkclient.Pipeline(len(paths), func(i int) {
		if err := c.zk.Delete(paths[i], -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			errs[i] = err
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(tps) == 0 {
		return nil
	}
	out, err := c.machine.OnISRChange(tps)
	if err != nil {
		return err
	}
	return c.perform(out)
}

// handleLogDirEvents re-arms the watch on /log_dir_event_notification,
// reads and deletes the pending notifications and, when process, asks each
// named broker about its replicas (Kafka's processLogDirEventNotification).
func (c *Controller) handleLogDirEvents(process bool) error {
	names, _, ch, err := c.zk.ChildrenW(zkdata.LogDirEventPath)
	if err != nil {
		return fmt.Errorf("listing log dir events: %w", err)
	}
	if !c.isArmed(evLogDir, "") {
		c.watch(evLogDir, "", ch)
	}
	sort.Strings(names)
	var brokers []int32
	for _, n := range names {
		p := zkdata.LogDirEventPath + "/" + n
		if process {
			data, _, err := c.zk.Get(p)
			if err == nil {
				id, derr := zkdata.DecodeLogDirEvent(data)
				if derr != nil {
					c.log.Warn("ignoring log dir event notification", "znode", n, "err", derr)
				} else {
					brokers = append(brokers, id)
				}
			}
		}
		if err := c.zk.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	if len(brokers) == 0 {
		return nil
	}
	c.log.Info("log directory failure", "brokers", brokers)
	return c.perform(c.machine.OnLogDirFailure(brokers))
}

// leaderAndISRAnswer is a broker's answer to a LeaderAndIsr, waiting for
// the loop.
type leaderAndISRAnswer struct {
	broker int32
	req    *kmsg.LeaderAndISRRequest
	resp   *kmsg.LeaderAndISRResponse
}

// OnResponse takes a broker's answer to a controller request to the loop:
// a LeaderAndIsr answer's KAFKA_STORAGE_ERROR partitions are replicas in an
// offline log directory (Kafka's LeaderAndIsrResponseReceived). It is the
// TCPChannel's ResponseFunc (with logging); a Channel given in Config
// calls it itself. It never blocks: the answer is queued for the loop.
func (c *Controller) OnResponse(broker int32, req kmsg.Request, resp kmsg.Response) {
	lreq, ok1 := req.(*kmsg.LeaderAndISRRequest)
	lresp, ok2 := resp.(*kmsg.LeaderAndISRResponse)
	if !ok1 || !ok2 || lresp.ErrorCode != 0 {
		return
	}
	c.respMu.Lock()
	c.resps = append(c.resps, leaderAndISRAnswer{broker, lreq, lresp})
	c.respMu.Unlock()
	select {
	case c.respWake <- struct{}{}:
	default: // the loop is told already
	}
}

// drainResponses hands the queued LeaderAndIsr answers to the machine, on
// the loop; answers to an earlier controller term are dropped.
func (c *Controller) drainResponses() {
	c.respMu.Lock()
	answers := c.resps
	c.resps = nil
	c.respMu.Unlock()
	m := c.machine
	if m == nil {
		return
	}
	for _, a := range answers {
		if a.req.ControllerEpoch != m.Ctx.Epoch {
			continue
		}
		if len(m.Ctx.OfflineDirs[a.broker]) == 0 && !storageErrors(a.resp) {
			continue // the common answer: nothing for the machine
		}
		stored, ok := LeaderAndISRResults(a.resp, m.Ctx)
		out, err := m.OnLeaderAndISRResponse(a.broker, a.req.BrokerEpoch, stored, ok)
		if err == nil {
			err = c.perform(out)
		}
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// storageErrors reports whether a LeaderAndIsr answer has a partition
// answered KAFKA_STORAGE_ERROR, without resolving its topic ids.
func storageErrors(resp *kmsg.LeaderAndISRResponse) bool {
	for _, err := range ResponseErrors(resp) {
		if errors.Is(err, kerr.KafkaStorageError) {
			return true
		}
	}
	return false
}

// LeaderAndISRResults splits a LeaderAndIsr answer into the partitions
// answered KAFKA_STORAGE_ERROR and those answered without error; topic ids
// (v5+) are resolved through ctx, unknown ones skipped.
func LeaderAndISRResults(resp *kmsg.LeaderAndISRResponse, ctx *controller.Context) (stored, ok []controller.TopicPartition) {
	add := func(topic string, p int32, code int16) {
		tp := controller.TopicPartition{Topic: topic, Partition: p}
		switch code {
		case kerr.KafkaStorageError.Code:
			stored = append(stored, tp)
		case 0:
			ok = append(ok, tp)
		}
	}
	for _, p := range resp.Partitions {
		add(p.Topic, p.Partition, p.ErrorCode)
	}
	if len(resp.Topics) == 0 {
		return stored, ok
	}
	names := map[[16]byte]string{}
	for n, t := range ctx.Topics {
		names[t.ID] = n
	}
	for _, t := range resp.Topics {
		n, known := names[t.TopicID]
		if !known {
			continue
		}
		for _, p := range t.Partitions {
			add(n, p.Partition, p.ErrorCode)
		}
	}
	return stored, ok
}
