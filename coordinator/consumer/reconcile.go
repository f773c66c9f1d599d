package consumer

import "time"

// This file is Kafka's CurrentAssignmentBuilder: how one member's current
// assignment moves towards its target, one heartbeat at a time.
//
// The rule that makes a group safe: a member is given a partition only
// when no member owns it (g.owners), and a member stops owning a partition
// only when its heartbeat no longer reports it. So between two owners of a
// partition there is always a heartbeat of the first acknowledging the
// revocation, and a partition has at most one consumer at any time.

// nextCurrent computes the member's next current assignment given the
// target assignment at targetEpoch and the partitions the member reported
// owning (nil when the heartbeat did not report them, which counts as
// "still owns everything").
//
//   - MemberStable: if a newer target exists, move towards it.
//   - MemberUnrevokedPartitions: wait until the member no longer reports
//     any partition pending revocation; then move to the next epoch.
//   - MemberUnreleasedPartitions: pick up target partitions that have
//     been released meanwhile.
//   - MemberUnknown: start over at the target epoch (the caller fenced
//     members that still own partitions).
func (g *group) nextCurrent(m *member, targetEpoch int32, target assignment, owned assignment) current {
	switch m.cur.state {
	case MemberStable:
		if m.cur.epoch != targetEpoch {
			return g.computeNext(m, m.cur.epoch, targetEpoch, target, owned)
		}
		return m.cur.clone()
	case MemberUnrevokedPartitions:
		if ownsRevoked(owned, m.cur.pending) {
			return m.cur.clone()
		}
		return g.computeNext(m, m.cur.epoch+1, targetEpoch, target, owned)
	case MemberUnreleasedPartitions:
		return g.computeNext(m, m.cur.epoch, targetEpoch, target, owned)
	default:
		return g.computeNext(m, targetEpoch, targetEpoch, target, owned)
	}
}

// ownsRevoked reports whether owned still holds a partition of revoked; an
// unreported owned set (nil) holds everything.
func ownsRevoked(owned, revoked assignment) bool {
	if owned == nil {
		return true
	}
	return owned.intersects(revoked)
}

// computeNext is CurrentAssignmentBuilder.computeNextAssignment: keep
// assigned ∩ target, revoke assigned − target, and add the partitions of
// target − assigned that no member owns. If something must be revoked
// (and the member still reports owning it) the member stays at epoch with
// nothing new; otherwise it moves to targetEpoch.
func (g *group) computeNext(m *member, epoch, targetEpoch int32, target, owned assignment) current {
	assigned := m.cur.assigned
	next := current{prevEpoch: m.cur.epoch, assigned: assignment{}, pending: assignment{}}
	toAssign := assignment{}
	unreleased := false
	for t, ps := range assigned {
		for _, p := range ps {
			if target.contains(t, p) {
				next.assigned.add(t, p)
			} else {
				next.pending.add(t, p)
			}
		}
	}
	for t, ps := range target {
		for _, p := range ps {
			if assigned.contains(t, p) {
				continue
			}
			if g.ownerOf(t, p) != "" {
				unreleased = true
			} else {
				toAssign.add(t, p)
			}
		}
	}
	switch {
	case len(next.pending) > 0 && ownsRevoked(owned, next.pending):
		next.state = MemberUnrevokedPartitions
		next.epoch = epoch
	case len(toAssign) > 0:
		for t, ps := range toAssign {
			for _, p := range ps {
				next.assigned.add(t, p)
			}
		}
		next.pending = assignment{}
		next.state = MemberStable
		if unreleased {
			next.state = MemberUnreleasedPartitions
		}
		next.epoch = targetEpoch
	default:
		next.pending = assignment{}
		next.state = MemberStable
		if unreleased {
			next.state = MemberUnreleasedPartitions
		}
		next.epoch = targetEpoch
	}
	return next
}

// reconcile moves member m towards the group's target assignment, emitting
// its new current assignment if it changed, and (re)arms or cancels its
// rebalance timeout: a member that enters MemberUnrevokedPartitions, or
// stays in it at a new epoch, must revoke within its rebalance timeout.
func (c *Coordinator) reconcile(w *out, now time.Time, g *group, m *member, owned assignment) {
	if m.isReconciledTo(g.assignmentEpoch) {
		return
	}
	next := g.nextCurrent(m, g.assignmentEpoch, g.target[m.id], owned)
	if next.equal(m.cur) {
		return
	}
	c.emit(w, opCurrent{group: g.id, member: m.id, cur: next})
	if m.cur.state == MemberUnrevokedPartitions {
		m.revokeDeadline = now.Add(ms(m.sub.rebalanceTimeoutMs))
		m.revokeEpoch = m.cur.epoch
	} else {
		m.revokeDeadline = timeZero
	}
}
