// Package controller owns cluster metadata: which topics exist, their ids,
// partition counts and config overrides, and the cluster id. A single node
// keeps it in a small file under log.dirs (FileStore); a cluster will keep it
// in ZooKeeper behind the same Store interface.
package controller

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/storage/vfs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// ErrTopicExists reports a CreateTopic for a name already taken.
var ErrTopicExists = errors.New("topic already exists")

// ErrUnknownTopic reports an operation on a topic that does not exist.
var ErrUnknownTopic = errors.New("unknown topic")

// Topic is the metadata of one topic.
type Topic struct {
	Name              string            `json:"name"`
	ID                [16]byte          `json:"id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
}

// Store is the metadata store. Implementations are safe for concurrent use.
type Store interface {
	ClusterID() string
	Topics() []Topic
	Topic(name string) (Topic, bool)
	CreateTopic(t Topic) error
	DeleteTopic(name string) error
	// UpdateTopicConfigs replaces a topic's config overrides.
	UpdateTopicConfigs(name string, configs map[string]string) error
	// AddPartitions raises a topic's partition count to total.
	AddPartitions(name string, total int32) error
	// NextProducerIDBlock reserves n producer ids and returns the first.
	// Ids are never handed out twice, across restarts too.
	NextProducerIDBlock(n int64) (int64, error)
	// SCRAM credentials (scram.go).
	ScramCredential(user, mechanism string) (ScramCredential, bool)
	ScramCredentials() map[string]map[string]ScramCredential
	AlterScramCredentials(changes []ScramChange) error
	// Group configs and finalized features (cluster_settings.go).
	GroupConfigs() map[string]map[string]string
	GroupConfig(group string) (map[string]string, error)
	UpdateGroupConfigs(group string, configs map[string]string) error
	FinalizedFeatures() (levels map[string]int16, epoch int64, set bool)
	UpdateFinalizedFeatures(levels map[string]int16) error
	// Client quotas by entity path (quotas.go).
	ClientQuotas() map[string]map[string]float64
	AlterClientQuotas(changes []QuotaChange) error
	// Dynamic broker configs (broker_configs.go): entity is a broker id or
	// "<default>" (config.DefaultBrokerEntity), Kafka's names for them.
	BrokerConfigs(entity string) map[string]string
	UpdateBrokerConfigs(entity string, configs map[string]string) error
	// ACL bindings (acls.go). UpdateACLs removes remove and adds add in one
	// change; adding a binding that exists keeps it once.
	ACLs() []ACL
	UpdateACLs(add, remove []ACL) error
	Close() error
}

// FileStore is a Store kept in one JSON file, rewritten atomically
// (temp file, fsync, rename) on every change.
type FileStore struct {
	fs   vfs.FS
	path string
	mu   struct {
		sync.Mutex
		state fileState
	}
}

type fileState struct {
	ClusterID      string           `json:"cluster_id"`
	Topics         map[string]Topic `json:"topics"`
	NextProducerID int64            `json:"next_producer_id"`
	// Scram maps user -> mechanism (SCRAM-SHA-256, SCRAM-SHA-512) -> credential.
	Scram map[string]map[string]ScramCredential `json:"scram_credentials,omitempty"`
	// GroupConfigs maps group id -> group config overrides (ConfigResource GROUP).
	GroupConfigs map[string]map[string]string `json:"group_configs,omitempty"`
	// Features are the finalized feature levels once UpdateFeatures has set
	// them (nil: the broker's defaults); FeaturesEpoch counts the updates.
	Features      map[string]int16 `json:"finalized_features,omitempty"`
	FeaturesEpoch int64            `json:"finalized_features_epoch,omitempty"`
	// Quotas maps a client quota entity's path (users/U, clients/C,
	// users/U/clients/C) -> quota key -> value.
	Quotas map[string]map[string]float64 `json:"client_quotas,omitempty"`
	// BrokerConfigs maps a broker id or "<default>" to its dynamic broker
	// configs (ConfigResource BROKER).
	BrokerConfigs map[string]map[string]string `json:"broker_configs,omitempty"`
	// ACLs are the authorizer's bindings (CreateAcls, DeleteAcls).
	ACLs []ACL `json:"acls,omitempty"`
}

// MetadataFile is the name of the FileStore's file inside the first log dir.
// It holds SCRAM credentials, so it is readable by its owner only (0600).
const MetadataFile = "kbroker-metadata.json"

// metadataFileMode is the FileStore's file mode: the file holds SCRAM
// credentials (salted, but enough to mount a dictionary attack).
const metadataFileMode = 0o600

// ErrMetadataMissing reports a metadata file that is absent although the
// log dirs hold data (partition directories or meta.properties): the
// metadata was lost, moved, or log.dirs changed. Creating an empty cluster
// there would make every existing log unowned.
var ErrMetadataMissing = errors.New("metadata file missing next to existing data")

// OpenFileStore loads the store at dir/MetadataFile, or creates it when it
// does not exist and neither dir nor any of dataDirs (the other log dirs)
// holds data; if they do, it returns an error wrapping ErrMetadataMissing
// that says what was found and what to do, and creates nothing. clusterID
// is used only when the store is new; an empty one generates a random id.
// An existing file readable by others is made 0600. findData lists what in
// a log dir is a broker's data (storage.DataInLogDir: controller knows no
// log layout); nil skips the check.
func OpenFileStore(dir, clusterID string, findData func(dir string) ([]string, error), dataDirs ...string) (*FileStore, error) {
	return openFileStore(vfs.Default, dir, clusterID, findData, dataDirs...)
}

// openFileStore is OpenFileStore on the file system fsys (tests simulate
// crashes with an in-memory one).
func openFileStore(fsys vfs.FS, dir, clusterID string, findData func(dir string) ([]string, error), dataDirs ...string) (*FileStore, error) {
	s := &FileStore{fs: fsys, path: filepath.Join(dir, MetadataFile)}
	b, err := vfs.ReadFile(fsys, s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := checkNoData(fsys, dir, dataDirs, findData); err != nil {
			return nil, err
		}
		if clusterID == "" {
			clusterID = NewClusterID()
		}
		s.mu.state = fileState{ClusterID: clusterID, Topics: map[string]Topic{}}
		if err := s.saveLocked(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("reading metadata: %w", err)
	default:
		if err := json.Unmarshal(b, &s.mu.state); err != nil {
			return nil, fmt.Errorf("metadata file %s is corrupt: %w", s.path, err)
		}
		if s.mu.state.Topics == nil {
			s.mu.state.Topics = map[string]Topic{}
		}
		if err := restrictMode(fsys, s.path); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// checkNoData returns an ErrMetadataMissing error if dir or any of
// dataDirs holds a broker's data, naming what it found.
func checkNoData(fsys vfs.FS, dir string, dataDirs []string, findData func(string) ([]string, error)) error {
	if findData == nil {
		return nil
	}
	path := filepath.Join(dir, MetadataFile)
	var found []string
	elsewhere := ""
	for i, d := range append([]string{dir}, dataDirs...) {
		if i > 0 && filepath.Clean(d) == filepath.Clean(dir) {
			continue
		}
		names, err := findData(d)
		if err != nil {
			return fmt.Errorf("checking %s for data before creating %s: %w", d, path, err)
		}
		for _, n := range names {
			found = append(found, filepath.Join(d, n))
		}
		if other := filepath.Join(d, MetadataFile); d != dir && elsewhere == "" {
			if _, err := fsys.Stat(other); err == nil {
				elsewhere = other
			}
		}
	}
	if len(found) == 0 && elsewhere == "" {
		return nil
	}
	const show = 5
	list := strings.Join(found[:min(len(found), show)], ", ")
	if len(found) > show {
		list += fmt.Sprintf(" and %d more", len(found)-show)
	}
	hint := "restore " + path + " from a backup, or move the log dirs' contents away to start a new, empty cluster"
	if elsewhere != "" {
		hint = "found " + elsewhere + ": the metadata lives in the first entry of log.dirs, so restore the previous order of log.dirs"
	}
	if list == "" {
		list = "none"
	}
	return fmt.Errorf("%w: %s does not exist, but the log dirs hold data (%s); "+
		"refusing to start an empty cluster over it (its topics would be unknown); %s",
		ErrMetadataMissing, path, list, hint)
}

// restrictMode makes path readable by its owner only if it is not already
// (on the operating system's files; an in-memory file system has no modes).
func restrictMode(fsys vfs.FS, path string) error {
	if fsys != vfs.Default {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("metadata file: %w", err)
	}
	if st.Mode().Perm()&^metadataFileMode != 0 {
		if err := os.Chmod(path, metadataFileMode); err != nil {
			return fmt.Errorf("restricting metadata file %s to mode 0600: %w", path, err)
		}
	}
	return nil
}

// NewClusterID returns a random id in Kafka's format (22 characters of URL-safe base64).
func NewClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// NewTopicID returns a random, non-zero topic id.
func NewTopicID() [16]byte {
	var b [16]byte
	for b == ([16]byte{}) {
		_, _ = rand.Read(b[:])
	}
	return b
}

// ClusterID implements Store.
func (s *FileStore) ClusterID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.state.ClusterID
}

// Topics implements Store; the result is sorted by name.
func (s *FileStore) Topics() []Topic {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Topic, 0, len(s.mu.state.Topics))
	for _, t := range s.mu.state.Topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Topic implements Store.
func (s *FileStore) Topic(name string) (Topic, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.mu.state.Topics[name]
	return t, ok
}

// CreateTopic implements Store.
func (s *FileStore) CreateTopic(t Topic) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.mu.state.Topics[t.Name]; ok {
		return fmt.Errorf("%w: %s", ErrTopicExists, t.Name)
	}
	s.mu.state.Topics[t.Name] = t
	if err := s.saveLocked(); err != nil {
		delete(s.mu.state.Topics, t.Name)
		return err
	}
	return nil
}

// DeleteTopic implements Store.
func (s *FileStore) DeleteTopic(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.mu.state.Topics[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	delete(s.mu.state.Topics, name)
	if err := s.saveLocked(); err != nil {
		s.mu.state.Topics[name] = t
		return err
	}
	return nil
}

// UpdateTopicConfigs implements Store.
func (s *FileStore) UpdateTopicConfigs(name string, configs map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.mu.state.Topics[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	nt := t
	nt.Configs = make(map[string]string, len(configs))
	for k, v := range configs {
		nt.Configs[k] = v
	}
	s.mu.state.Topics[name] = nt
	if err := s.saveLocked(); err != nil {
		s.mu.state.Topics[name] = t
		return err
	}
	return nil
}

// AddPartitions implements Store. total must exceed the current count.
func (s *FileStore) AddPartitions(name string, total int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.mu.state.Topics[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	if total <= t.Partitions {
		return fmt.Errorf("topic %s has %d partitions; cannot change to %d", name, t.Partitions, total)
	}
	nt := t
	nt.Partitions = total
	s.mu.state.Topics[name] = nt
	if err := s.saveLocked(); err != nil {
		s.mu.state.Topics[name] = t
		return err
	}
	return nil
}

// NextProducerIDBlock implements Store.
func (s *FileStore) NextProducerIDBlock(n int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.mu.state.NextProducerID
	s.mu.state.NextProducerID += n
	if err := s.saveLocked(); err != nil {
		s.mu.state.NextProducerID = first
		return 0, err
	}
	return first, nil
}

// Close implements Store.
func (s *FileStore) Close() error { return nil }

func (s *FileStore) saveLocked() error {
	b, err := json.MarshalIndent(&s.mu.state, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding metadata: %w", err)
	}
	// A temp file left by a crash would keep its old mode through
	// O_TRUNC: remove it, so the new one is created 0600.
	_ = s.fs.Remove(s.path + ".tmp")
	if err := vfs.WriteFileAtomic(s.fs, s.path, b, metadataFileMode); err != nil {
		return fmt.Errorf("writing metadata: %w", err)
	}
	return nil
}
