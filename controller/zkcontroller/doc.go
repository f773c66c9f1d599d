// Package zkcontroller runs kbroker's controller in ZooKeeper mode, as
// Kafka's KafkaController: every broker runs one; the one whose ephemeral
// /controller znode exists is active. The active controller bumps
// /controller_epoch, reads the whole cluster state back from ZooKeeper,
// watches /brokers/ids, /brokers/topics (and each topic), /admin/delete_topics,
// /isr_change_notification and /log_dir_event_notification, feeds what it
// sees to controller.Machine, does the ZooKeeper writes (each conditional on
// its /controller_epoch version) and sends the resulting requests through a
// Channel. LeaderAndIsr answers come back through OnResponse: partitions
// answered KAFKA_STORAGE_ERROR are replicas in an offline log dir
// (controller.Context.OfflineDirs), moved off as a dead broker's. A log dir
// event names a broker some of whose dirs failed; the controller deletes
// it and sends that broker a LeaderAndIsr for each of its partitions,
// which finds them (Kafka's processLogDirEventNotification). It resigns
// when its session expires, when a write finds a newer controller, or on a
// ZooKeeper error, and runs for election again.
//
// # What a broker does in cluster mode
//
// Start-up, in this order: zkclient.Dial (zookeeper.connect with chroot,
// zookeeper.session.timeout.ms, zookeeper.connection.timeout.ms);
// zkstore.Open (cluster id, the Store); open the logs; start the
// inter-broker listener; zkclient.Client.RegisterBroker with every
// advertised endpoint (its Epoch is the broker epoch); zkcontroller.Start
// with Listener = inter.broker.listener.name. Close the controller before
// the ZooKeeper client.
//
// The inter-broker listener answers three requests from the controller
// (versions: controller.LeaderAndISRVersion, UpdateMetadataVersion,
// StopReplicaVersion), each first through one controller.Fence:
// Fence.Admit(req.ControllerEpoch, req.BrokerEpoch, registration.Epoch())
// → STALE_CONTROLLER_EPOCH / STALE_BROKER_EPOCH for the whole request.
//
//   - LeaderAndIsr: per partition, controller.AdmitPartitionState(leader
//     epoch in the request, the partition's current one) (stale →
//     STALE_CONTROLLER_EPOCH for that partition); then become leader when
//     Leader is this broker (HW/ISR from the request, partition epoch =
//     ZKVersion, start accepting produce at LeaderEpoch) or follower of
//     Leader (truncate by OffsetForLeaderEpoch when the epoch moved, fetch
//     from the leader's endpoint in LiveLeaders). IsNew: the log may be
//     created. Answer per partition; a partition whose log is in an
//     offline log dir is KAFKA_STORAGE_ERROR before any epoch check.
//   - UpdateMetadata: replace the metadata cache's live brokers (with every
//     listener's endpoint) and the given partitions' leader, epoch, ISR,
//     replicas, offline replicas; Leader == controller.LeaderDuringDelete
//     (-2) removes the partition. Metadata, DescribeCluster and
//     FindCoordinator answer from this cache.
//   - StopReplica: stop fetching for / leading each partition; Delete
//     removes its log. LeaderEpoch EpochDuringDelete (-2) or -1 always
//     applies; otherwise only a newer or equal epoch.
//
// When one log dir fails and others remain, the broker stops fetching for
// and leading its partitions there and calls
// zkclient.Client.NotifyLogDirFailure (/log_dir_event_notification); when
// every dir fails it halts.
//
// A leader changes its ISR with zkclient.Client.ChangeISR (a state write
// conditional on the version from its last LeaderAndIsr or read; on
// zk.ErrBadVersion re-read the state and follow it, never retry its own
// view), which also notifies the controller. Admin requests: CreateTopics,
// DeleteTopics, CreatePartitions and config changes go through
// zkstore.Store; ControlledShutdown and ElectLeaders call
// Controller.ControlledShutdown / ElectLeaders on the broker whose
// controller is active (ErrNotController → NOT_CONTROLLER elsewhere; the
// client retries at the controller named in Metadata, ControllerID()).
// On SIGTERM a broker asks the controller for a controlled shutdown until
// no partition remains, then stops.
package zkcontroller
