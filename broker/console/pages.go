package console

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

// overviewData is the front page: the cluster's brokers and controller.
type overviewData struct {
	Cluster    string
	Controller int32
	Brokers    kadm.BrokerDetails
	Topics     int
	Throughput bool
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	adm, _, err := c.admin()
	if err != nil {
		c.render(w, "overview", "Brokers", nil, err)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	md, err := adm.Metadata(ctx)
	if err != nil {
		c.render(w, "overview", "Brokers", nil, err)
		return
	}
	c.render(w, "overview", "Brokers", overviewData{
		Cluster: md.Cluster, Controller: md.Controller, Brokers: md.Brokers,
		Topics: len(md.Topics), Throughput: c.cfg.Metrics != nil,
	}, nil)
}

// partitionView is one row of a topic's partition table.
type partitionView struct {
	Partition              int32
	Leader, Epoch          int32
	Replicas, ISR, Offline []int32
	Start, End             int64 // log start offset and high watermark; -1 unknown
	Size                   int64 // bytes of the leader's replica; -1 unknown
	Err                    string
}

// topicView is a topic with its partitions.
type topicView struct {
	Name       string
	Internal   bool
	RF         int
	Partitions []partitionView
	Size       int64
	Messages   int64 // sum of end - start: records, less what compaction removed
	Err        string
	Configs    []kadm.Config
	// ProduceCurl is a curl command line that produces to the topic
	// through the broker's REST proxy; "" without one.
	ProduceCurl string
}

// loadTopics describes topics (all, internal ones included, when none are
// named): metadata, offsets and log dir sizes.
func loadTopics(ctx context.Context, adm *kadm.Client, names ...string) ([]topicView, error) {
	var md kadm.Metadata
	var err error
	if len(names) == 0 {
		md, err = adm.Metadata(ctx)
	} else {
		md, err = adm.Metadata(ctx, names...)
	}
	if err != nil {
		return nil, err
	}
	topics := md.Topics.Names()
	var errs []error
	starts, err := adm.ListStartOffsets(ctx, topics...)
	errs = append(errs, err)
	ends, err := adm.ListEndOffsets(ctx, topics...)
	errs = append(errs, err)
	dirs, err := adm.DescribeAllLogDirs(ctx, md.Topics.TopicsSet())
	errs = append(errs, err)
	out := shapeTopics(md.Topics, starts, ends, dirs)
	return out, errors.Join(errs...)
}

// shapeTopics joins metadata, offsets and log dirs into sorted views. A
// partition's size is its leader's replica's, else the largest replica's.
func shapeTopics(td kadm.TopicDetails, starts, ends kadm.ListedOffsets, dirs kadm.DescribedAllLogDirs) []topicView {
	sizes := make(map[int32]map[string]map[int32]int64) // broker → topic → partition
	for broker, ds := range dirs {
		ds.EachPartition(func(p kadm.DescribedLogDirPartition) {
			if p.IsFuture {
				return
			}
			if sizes[broker] == nil {
				sizes[broker] = make(map[string]map[int32]int64)
			}
			if sizes[broker][p.Topic] == nil {
				sizes[broker][p.Topic] = make(map[int32]int64)
			}
			sizes[broker][p.Topic][p.Partition] = p.Size
		})
	}
	offset := func(l kadm.ListedOffsets, t string, p int32) int64 {
		if o, ok := l.Lookup(t, p); ok && o.Err == nil {
			return o.Offset
		}
		return -1
	}
	var out []topicView
	for _, t := range td {
		v := topicView{Name: t.Topic, Internal: t.IsInternal}
		if t.Err != nil {
			v.Err = t.Err.Error()
		}
		for _, p := range t.Partitions.Sorted() {
			pv := partitionView{Partition: p.Partition, Leader: p.Leader, Epoch: p.LeaderEpoch,
				Replicas: p.Replicas, ISR: p.ISR, Offline: p.OfflineReplicas,
				Start: offset(starts, t.Topic, p.Partition), End: offset(ends, t.Topic, p.Partition), Size: -1}
			if p.Err != nil {
				pv.Err = p.Err.Error()
			}
			if s, ok := sizes[p.Leader][t.Topic][p.Partition]; ok {
				pv.Size = s
			} else {
				for _, r := range p.Replicas {
					if s, ok := sizes[r][t.Topic][p.Partition]; ok && s > pv.Size {
						pv.Size = s
					}
				}
			}
			if pv.Size > 0 {
				v.Size += pv.Size
			}
			if pv.Start >= 0 && pv.End >= pv.Start {
				v.Messages += pv.End - pv.Start
			}
			v.RF = max(v.RF, len(p.Replicas))
			v.Partitions = append(v.Partitions, pv)
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b topicView) int {
		if a.Internal != b.Internal { // user topics first
			if a.Internal {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

func (c *Console) topics(w http.ResponseWriter, r *http.Request) {
	adm, _, err := c.admin()
	if err != nil {
		c.render(w, "topics", "Topics", nil, err)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	ts, err := loadTopics(ctx, adm)
	c.render(w, "topics", "Topics", ts, err)
}

func (c *Console) topic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	adm, _, err := c.admin()
	if err != nil {
		c.render(w, "topic", name, nil, err)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	ts, err := loadTopics(ctx, adm, name)
	if len(ts) != 1 {
		c.render(w, "topic", name, nil, errors.Join(err, errors.New("no such topic")))
		return
	}
	t := ts[0]
	cfgs, cerr := adm.DescribeTopicConfigs(ctx, name)
	if rc, e := cfgs.On(name, nil); e == nil && rc.Err == nil {
		t.Configs = rc.Configs
		slices.SortFunc(t.Configs, func(a, b kadm.Config) int { return cmp.Compare(a.Key, b.Key) })
	} else {
		cerr = errors.Join(cerr, e, rc.Err)
	}
	t.ProduceCurl = c.produceCurl(name)
	c.render(w, "topic", name, t, errors.Join(err, cerr))
}

// produceCurl is the curl line that produces a JSON record to topic
// through the REST proxy (Config.RestProxy), "" without one. Topic names
// are [a-zA-Z0-9._-], safe in a shell word.
func (c *Console) produceCurl(topic string) string {
	if c.cfg.RestProxy == nil {
		return ""
	}
	base, login := c.cfg.RestProxy()
	if base == "" {
		return ""
	}
	user := ""
	if login {
		user = "-u USER:PASSWORD "
	}
	return "curl " + user + "-X POST -H 'Content-Type: application/vnd.kafka.json.v2+json' -d '{\"records\":[{\"key\":\"k\",\"value\":{\"hello\":\"world\"}}]}' " + base + "/topics/" + topic
}

// txnView is one transaction in progress.
type txnView struct {
	kadm.DescribedTransaction
	Partitions []string // topic-partition, sorted
}

// inProgress are the transaction states with partitions not yet settled.
var inProgress = map[string]bool{"Ongoing": true, "PrepareCommit": true, "PrepareAbort": true, "PrepareEpochFence": true}

// txnsData is the transactions page.
type txnsData struct {
	Open  []txnView
	Other int // transactional ids in no transaction
}

func (c *Console) transactions(w http.ResponseWriter, r *http.Request) {
	adm, _, err := c.admin()
	if err != nil {
		c.render(w, "transactions", "Transactions", nil, err)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil && len(listed) == 0 {
		c.render(w, "transactions", "Transactions", nil, err)
		return
	}
	var d txnsData
	var ids []string
	for id, t := range listed {
		if inProgress[t.State] {
			ids = append(ids, id)
		} else {
			d.Other++
		}
	}
	if len(ids) > 0 {
		described, derr := adm.DescribeTransactions(ctx, ids...)
		err = errors.Join(err, derr)
		for _, t := range described.Sorted() {
			if !inProgress[t.State] { // finished since it was listed
				d.Other++
				continue
			}
			v := txnView{DescribedTransaction: t}
			for _, tp := range t.Topics.Sorted() {
				for _, p := range tp.Partitions {
					v.Partitions = append(v.Partitions, tpString(tp.Topic, p))
				}
			}
			d.Open = append(d.Open, v)
		}
	}
	c.render(w, "transactions", "Transactions", d, err)
}
