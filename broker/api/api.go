// Package api answers the Kafka APIs, as Kafka's KafkaApis: API.Handle
// dispatches a decoded request by key (dispatch.go) to one handler per API,
// one file each, named after the API. A handler is a method of (request
// context, kmsg request) → response; it works through the partitions
// (replica.Manager), the coordinator hosts (coordhost.Host), the metadata
// store and the configuration, never through the broker that wires them.
package api

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/authz"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/broker/quota"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/coordinator/groupconfig"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// API answers every Kafka API, as Kafka's KafkaApis: Handle dispatches a
// decoded request by key to one handler per API (one file each), which
// works through the partitions (Partitions, implemented by replica.Manager),
// the coordinator hosts (Coordinators, implemented by coordhost.Host), the
// metadata store and the configuration.
type API struct {
	cfg   config.Config
	log   *slog.Logger
	now   func() time.Time
	store controller.Store
	rm    Partitions
	co    Coordinators
	// closing is closed when the broker shuts down: requests waiting on a
	// coordinator close their connection unanswered.
	closing <-chan struct{}
	// addrs returns the bound listener addresses, advertised for listeners
	// configured with port 0.
	addrs func() []net.Addr
	// scramMu serialises AlterUserScramCredentials (validate, then store).
	scramMu sync.Mutex
	// featuresMu serialises UpdateFeatures (read levels, check, store).
	featuresMu sync.Mutex
	// cluster is set in cluster mode (cluster.go), nil on a single node.
	cluster *Cluster
	// quotas are the client quotas the broker enforces (client_quotas.go);
	// quotaMu serialises AlterClientQuotas (store, then manager).
	quotas  *quota.Manager
	quotaMu sync.Mutex
	// oauth are the OAUTHBEARER validators (sasl_oauth.go).
	oauth oauthValidators
	// brokerCfg enables dynamic broker configs (broker_configs.go); nil: none.
	brokerCfg *brokerConfigState
	// schemas answers produce's schema validation (schema_validation.go);
	// nil without a Schema Registry on this broker.
	schemas SchemaChecker
	// authz decides requests (authz.go); nil without authorizer.class.name.
	authz *authz.Authorizer
	// aclMu serialises CreateAcls and DeleteAcls (read, change, store, reload).
	aclMu sync.Mutex
}

// New returns the handlers of a broker; addrs returns its bound listener
// addresses.
func New(cfg config.Config, store controller.Store, rm Partitions, co Coordinators, closing <-chan struct{}, addrs func() []net.Addr) *API {
	b := &API{cfg: cfg, log: cfg.Logger, now: cfg.Now, store: store, rm: rm, co: co, closing: closing, addrs: addrs}
	b.authz = b.newAuthorizer()
	return b
}

// Partitions is what the handlers need from the partitions (replica.Manager).
type Partitions interface {
	TopicByName(name string) *replica.Topic
	TopicByID(id [16]byte) *replica.Topic
	TopicNames() []string
	PartitionOf(topic string, partition int32) *replica.Partition
	AllPartitions() []*replica.Partition
	Dirs() []*storage.Dir
	CheckpointDirs(dirs map[*storage.Dir]bool)
	CreateTopic(name string, partitions int32, rf int16, configs map[string]string, validateOnly bool) (*replica.Topic, *kerr.Error, string)
	DeleteTopic(name string) *kerr.Error
	CreatePartitions(rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) (*kerr.Error, string)
	AlterTopicConfigs(name string, validateOnly bool, update func(current map[string]string) (map[string]string, *kerr.Error, string)) (*kerr.Error, string)
	ApplyTopicConfigs(name string, configs map[string]string)
	AppendRecords(p *replica.Partition, batch []byte, h records.Header) replica.AppendResult
	CheckProduce(p *replica.Partition, acks int16) *kerr.Error
	Produce(p *replica.Partition, batch []byte, h records.Header, acks int16, deadline time.Time) replica.AppendResult
	OffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse
	Fetch(req *kmsg.FetchRequest, resp *kmsg.FetchResponse)
	// FetchSpliced is Fetch with the records left in the segment files as
	// ranges registered with spl (sent with sendfile by the connection).
	FetchSpliced(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, spl *protocol.Spliced)
}

// Coordinators is what the handlers need from the coordinator hosts
// (coordhost.Host). Requests answered by a coordinator carry a token the
// answer is delivered on.
type Coordinators interface {
	EnsureGroups() error
	EnsureTxns() error
	GroupRequest(client group.Client, req kmsg.Request, tok coordhost.Token) error
	TxnRequest(client group.Client, req kmsg.Request, tok coordhost.Token) error
	TxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, tok coordhost.Token)
	MarkUnstableOffsets(req *kmsg.OffsetFetchRequest, r *kmsg.OffsetFetchResponse)
	VerifyTxnPartition(txnID string, producerID int64, epoch int16, topic string, partition int32) int16
	AddTxnPartition(txnID string, producerID int64, epoch int16, topic string, partition int32) int16
	// WriteTxnMarker appends a transaction marker sent by a transaction
	// coordinator (WriteTxnMarkers) and settles its effect on transactional
	// offsets; done gets the partition's error code once acknowledged.
	WriteTxnMarker(p *replica.Partition, producerID int64, epoch int16, commit bool, coordinatorEpoch int32, done func(code int16))
	NextProducerID() (int64, error)
	TopicsChanged()
	Shares() *coordhost.ShareHost
	// The share-group offsets admin of a cluster (coordhost/share_admin_cluster.go).
	ShareStateSummaryOf(ctx context.Context, group string, tp share.TopicPartition) (coordhost.ShareSummary, bool, int16, error)
	ShareResetState(ctx context.Context, group string, tp share.TopicPartition, start int64) (int16, error)
	ShareDeleteState(ctx context.Context, group string, tp share.TopicPartition) (int16, error)
	GroupConfigs() *groupconfig.Store
	ApplyShareAcks(c *share.Coordinator, now time.Time, group, member string, renew bool, acks []coordhost.ShareAcks) []int16
	// ShareStateStore is the share coordinator's state store (share_state.go).
	ShareStateStore
}

var (
	_ Partitions   = (*replica.Manager)(nil)
	_ Coordinators = (*coordhost.Host)(nil)
)
