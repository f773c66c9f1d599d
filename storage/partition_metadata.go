package storage

// Kafka's partition.metadata (PartitionMetadataFile): the topic id of the
// partition's log, so that a log left behind by a deleted topic is never
// taken for the log of a new topic of the same name. Two lines, the second
// without a line end, as Kafka writes them:
//
//	version: 0
//	topic_id: <the topic's Uuid, 22 characters of URL-safe base64>

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kbroker/kbroker/storage/vfs"
)

// PartitionMetadataFile is the file in a partition dir naming its topic id.
const PartitionMetadataFile = "partition.metadata"

// ErrInconsistentTopicID reports a partition dir whose partition.metadata
// names another topic id than the topic's (Kafka's
// InconsistentTopicIdException).
var ErrInconsistentTopicID = errors.New("partition dir belongs to another topic id")

// EncodePartitionMetadata returns Kafka's partition.metadata for topicID.
func EncodePartitionMetadata(topicID [16]byte) []byte {
	return []byte("version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(topicID[:]))
}

// DecodePartitionMetadata parses Kafka's partition.metadata.
func DecodePartitionMetadata(b []byte) ([16]byte, error) {
	var id [16]byte
	lines := strings.Split(strings.TrimRight(string(b), "\r\n"), "\n")
	if len(lines) != 2 {
		return id, fmt.Errorf("%s: %d lines, want 2", PartitionMetadataFile, len(lines))
	}
	field := func(line, key string) (string, error) {
		v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), key+": ")
		if !ok {
			return "", fmt.Errorf("%s: malformed line %q, want %q", PartitionMetadataFile, line, key+": …")
		}
		return strings.TrimSpace(v), nil
	}
	v, err := field(lines[0], "version")
	if err != nil {
		return id, err
	}
	if v != "0" {
		return id, fmt.Errorf("%s: unsupported version %q", PartitionMetadataFile, v)
	}
	s, err := field(lines[1], "topic_id")
	if err != nil {
		return id, err
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) != 16 {
		return id, fmt.Errorf("%s: topic_id %q is not a Kafka Uuid", PartitionMetadataFile, s)
	}
	copy(id[:], raw)
	return id, nil
}

// EnsurePartitionMetadata makes the log's partition.metadata name topicID,
// as Kafka does when a partition is created or first led: a missing file is
// written atomically; a file naming topicID is left alone; a file naming
// another id is left alone and is an error wrapping ErrInconsistentTopicID;
// an unreadable one is replaced. A zero topicID (unknown) does nothing.
func (l *Log) EnsurePartitionMetadata(topicID [16]byte) error {
	if topicID == ([16]byte{}) {
		return nil
	}
	path := filepath.Join(l.dir, PartitionMetadataFile)
	b, err := vfs.ReadFile(l.fs, path)
	switch {
	case err == nil:
		id, derr := DecodePartitionMetadata(b)
		if derr == nil && id == topicID {
			return nil
		}
		if derr == nil {
			return fmt.Errorf("%w: %s names topic id %s, the topic's is %s", ErrInconsistentTopicID, path,
				base64.RawURLEncoding.EncodeToString(id[:]), base64.RawURLEncoding.EncodeToString(topicID[:]))
		}
		l.logger.Warn("replacing unreadable partition.metadata", "file", path, "err", derr)
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := vfs.WriteFileAtomic(l.fs, path, EncodePartitionMetadata(topicID), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
