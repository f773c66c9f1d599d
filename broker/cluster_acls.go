package broker

// ACL propagation in cluster mode: every broker watches ZooKeeper's
// /kafka-acl-changes and /kafka-acl-extended-changes (written by whichever
// broker served CreateAcls or DeleteAcls, or by kafka-acls.sh
// --authorizer-properties zookeeper.connect=…) and reloads its authorizer
// from /kafka-acl, as Kafka's AclAuthorizer does. The watch goroutine is
// started by startCluster and stopped by closeController, before the
// ZooKeeper session ends.

// startACLWatch starts the watch when an authorizer is configured.
func (b *Broker) startACLWatch() {
	c := b.cluster
	if c == nil || !b.cfg.Authz.Enabled || c.aclStop != nil {
		return
	}
	c.aclStop, c.aclDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.aclDone)
		c.store.WatchACLChanges(c.aclStop, b.api.ReloadACLs)
	}()
}

// stopACLWatch stops the watch and waits for it.
func (b *Broker) stopACLWatch() {
	c := b.cluster
	if c == nil || c.aclStop == nil {
		return
	}
	close(c.aclStop)
	<-c.aclDone
	c.aclStop = nil
}
