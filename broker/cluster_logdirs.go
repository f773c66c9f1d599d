package broker

// Log dir failures in cluster mode: when one log dir goes offline while
// others remain, the broker stops fetching for and leading the partitions
// in it and writes /log_dir_event_notification/log_dir_event_<seq>, as
// Kafka's ReplicaManager.handleLogDirFailure. The controller then sends
// this broker a LeaderAndIsr for each of its partitions; those in the
// offline dir answer KAFKA_STORAGE_ERROR (api.ClusterReplicas.Offline) and
// lose leadership and ISR membership. When every dir is offline the broker
// stops instead (Failed). The watch goroutine is started by startCluster
// and stopped by closeController, before the ZooKeeper session ends.

// startLogDirWatch starts handling the dirs queued on FailedDirs (those
// that failed before it started included).
func (b *Broker) startLogDirWatch() {
	c := b.cluster
	if c == nil || c.dirStop != nil {
		return
	}
	c.dirStop, c.dirDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.dirDone)
		for {
			select {
			case <-c.dirStop:
				return
			case path := <-b.rm.FailedDirs():
				n := b.rm.StopDirReplicas(path)
				b.log.Error("log dir offline: its replicas stopped, telling the controller", "dir", path, "partitions", n)
				if err := c.zk.NotifyLogDirFailure(b.cfg.NodeID); err != nil {
					b.log.Error("log dir event not written: the controller learns of the offline dir only on its next LeaderAndIsr", "dir", path, "err", err)
				}
			}
		}
	}()
}

// stopLogDirWatch stops the watch and waits for it.
func (b *Broker) stopLogDirWatch() {
	c := b.cluster
	if c == nil || c.dirStop == nil {
		return
	}
	close(c.dirStop)
	<-c.dirDone
	c.dirStop = nil
}
