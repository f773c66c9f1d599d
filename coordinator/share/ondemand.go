package share

// Cluster mode (Config.LoadOnDemand). A broker's Coordinator holds the
// membership of the share groups whose __consumer_offsets partition it
// leads and the in-flight state of the share-partitions of the data
// partitions it leads; their persisted state lives at the share
// coordinator (the leader of the share-partition's __share_group_state
// partition), which may be another broker. A share-partition is unknown
// until the caller reads its persisted state and installs it
// (InstallState); until then FetchOffset finds nothing to acquire and
// Acknowledge answers INVALID_RECORD_STATE (nothing was acquired here).
// When the data partition's leadership moves, DropPartition forgets its
// in-flight state: the next leader reads what was persisted.

// Unloaded returns the share-partitions of tps whose state the caller
// must read and install before group can fetch from them.
func (c *Coordinator) Unloaded(group string, tps []TopicPartition) []TopicPartition {
	if !c.cfg.LoadOnDemand {
		return nil
	}
	g := c.groups[group]
	var out []TopicPartition
	for _, tp := range tps {
		if g != nil && g.parts[tp] != nil || c.absent[stateKey{group, tp}] {
			continue
		}
		out = append(out, tp)
	}
	return out
}

// InstallState installs a share-partition's persisted state, read from
// its share coordinator; nil means it has none (the first fetch
// initializes it from share.auto.offset.reset). State already present is
// kept: it is newer than anything persisted. The snapshot must be valid
// (Snapshot.Validate).
func (c *Coordinator) InstallState(group string, tp TopicPartition, s *Snapshot) {
	g := c.groupOrCreate(group)
	if g.parts[tp] != nil {
		return
	}
	k := stateKey{group, tp}
	if s == nil {
		if c.absent == nil {
			c.absent = map[stateKey]bool{}
		}
		c.absent[k] = true
		return
	}
	delete(c.absent, k)
	g.parts[tp] = partitionOf(*s)
	c.changes++ // a parked fetch may acquire now
}

// DropPartition forgets every group's in-flight state of tp and any
// write of it not yet taken (its leadership moved): records acquired
// here are available again at the next leader once their state is read.
func (c *Coordinator) DropPartition(tp TopicPartition) {
	for id, g := range c.groups {
		delete(g.parts, tp)
		delete(c.absent, stateKey{id, tp})
		delete(c.dirty, stateKey{id, tp})
	}
	c.changes++
}

// DropState forgets one group's state of tp (a write of it failed or was
// fenced), so that it is read again from its share coordinator.
func (c *Coordinator) DropState(group string, tp TopicPartition) {
	if g := c.groups[group]; g != nil {
		delete(g.parts, tp)
	}
	delete(c.absent, stateKey{group, tp})
	delete(c.dirty, stateKey{group, tp})
	c.changes++
}

// DropMembers forgets the members of the groups coordinated here that
// owns reports false for (the group's __consumer_offsets partition moved
// to another broker), without releasing their records: the members
// rejoin at the new coordinator and still hold what they acquired from
// this broker's partitions.
func (c *Coordinator) DropMembers(owns func(group string) bool) {
	for id, g := range c.groups {
		if len(g.members) > 0 && !owns(id) {
			g.members = map[string]*member{}
		}
	}
}

// EnsureGroup creates an empty share group if there is none (cluster
// mode's AlterShareGroupOffsets, whose state lives at the share coordinators).
func (c *Coordinator) EnsureGroup(id string) { c.groupOrCreate(id) }
