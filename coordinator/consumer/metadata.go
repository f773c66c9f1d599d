package consumer

import (
	"regexp"
	"sort"
)

// topicIndex is one snapshot of the caller's Topics.
type topicIndex struct {
	byName map[string]TopicInfo
	byID   map[uuid]TopicInfo
	names  []string // sorted
}

// topicIndex snapshots the caller's topics. Topics with an empty name or
// fewer than one partition are ignored; of two topics with one name, the
// first listed wins.
func (c *Coordinator) topicIndex() topicIndex {
	ts := c.topics.Topics()
	idx := topicIndex{byName: make(map[string]TopicInfo, len(ts)), byID: make(map[uuid]TopicInfo, len(ts))}
	for _, t := range ts {
		if t.Name == "" || t.Partitions < 1 {
			continue
		}
		if _, dup := idx.byName[t.Name]; dup {
			continue
		}
		idx.byName[t.Name] = t
		idx.byID[t.ID] = t
		idx.names = append(idx.names, t.Name)
	}
	sort.Strings(idx.names)
	return idx
}

// subscribed returns the existing topics a subscription resolves to: its
// topic names that exist, plus every topic its regex matches, internal ones
// included (a regex naming __consumer_offsets gets it, as Kafka 4 does).
// The result is sorted by name.
func (idx topicIndex) subscribed(names []string, re *regexp.Regexp) []TopicInfo {
	seen := make(map[string]bool)
	var out []TopicInfo
	for _, n := range names {
		if t, ok := idx.byName[n]; ok && !seen[n] {
			seen[n] = true
			out = append(out, t)
		}
	}
	if re != nil {
		for _, n := range idx.names {
			if !seen[n] && re.MatchString(n) {
				seen[n] = true
				out = append(out, idx.byName[n])
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// memberTopics resolves member m's subscription.
func (idx topicIndex) memberTopics(m *member) []TopicInfo {
	return idx.subscribed(m.sub.topicNames, m.re)
}

// subMeta computes a group's subscription metadata from its members as
// they are now, sorted by topic name.
func (idx topicIndex) subMeta(g *group) []topicMeta {
	byName := make(map[string]topicMeta)
	for _, m := range g.members {
		for _, t := range idx.memberTopics(m) {
			byName[t.Name] = topicMeta{id: t.ID, name: t.Name, partitions: t.Partitions}
		}
	}
	out := make([]topicMeta, 0, len(byName))
	for _, t := range byName {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// refreshSubMeta recomputes g's subscription metadata and, if it differs
// from what the group holds, emits it. It reports whether it changed; the
// caller bumps the group epoch then.
func (c *Coordinator) refreshSubMeta(w *out, g *group, idx topicIndex) bool {
	meta := idx.subMeta(g)
	same := len(meta) == len(g.subMeta)
	for _, t := range meta {
		if !same {
			break
		}
		same = g.subMeta[t.name] == t
	}
	if same {
		return false
	}
	c.emit(w, opSubMeta{group: g.id, topics: meta})
	return true
}

// bumpEpoch emits the next group epoch of g.
func (c *Coordinator) bumpEpoch(w *out, g *group) {
	c.emit(w, opGroupEpoch{group: g.id, epoch: g.epoch + 1})
}
