package storage

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MetaPropertiesFile is the file in every log dir that names the node and
// the cluster the dir belongs to, as Kafka's meta.properties.
const MetaPropertiesFile = "meta.properties"

// ErrMetaPropertiesMismatch reports a log dir whose meta.properties names
// another node or another cluster than this broker's configuration: the dir
// belongs to someone else, or the broker's metadata was lost and recreated.
var ErrMetaPropertiesMismatch = errors.New("log dir belongs to another node or cluster")

// MetaProperties is the content of a log dir's meta.properties in Kafka's
// format: version 1 carries node.id, cluster.id and directory.id; version 0
// (ZooKeeper-mode Kafka) carries broker.id and an optional cluster.id.
type MetaProperties struct {
	Version   int
	ClusterID string // empty only in a version 0 file written before KIP-78
	NodeID    int32
	// DirectoryID is the dir's Kafka Uuid (22 characters of URL-safe
	// base64), or empty if the file has none.
	DirectoryID string
}

// Kafka's meta.properties keys.
const (
	metaVersionKey     = "version"
	metaClusterIDKey   = "cluster.id"
	metaNodeIDKey      = "node.id"
	metaBrokerIDKey    = "broker.id"
	metaDirectoryIDKey = "directory.id"
)

// EnsureMetaProperties checks the log dir at dir against this broker's node
// id and cluster id. A dir without meta.properties gets one (version 1, a new
// random directory.id), written atomically; a dir whose file names another
// node.id or cluster.id is refused with an error wrapping
// ErrMetaPropertiesMismatch that names both values. An existing file is
// never rewritten. It returns what the dir's file holds afterwards.
func EnsureMetaProperties(dir string, nodeID int32, clusterID string) (MetaProperties, error) {
	return EnsureMetaPropertiesVersion(dir, nodeID, clusterID, 1, nil)
}

// EnsureMetaPropertiesVersion is EnsureMetaProperties writing version
// (0 or 1) when the dir has no file. A ZooKeeper-mode broker writes
// version 0 (broker.id, cluster.id), as Kafka 3.x in ZooKeeper mode does:
// Kafka 3.9 refuses to start on a version 1 file unless it is migrating to
// KRaft. So that such a dir goes back to Kafka, a version 1 file naming
// this node and cluster is rewritten as version 0 when version is 0, with
// a line to logf (if not nil); its directory.id, which version 0 has not,
// is dropped.
func EnsureMetaPropertiesVersion(dir string, nodeID int32, clusterID string, version int, logf func(msg string, args ...any)) (MetaProperties, error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	mp, found, err := ReadMetaProperties(dir)
	if err != nil {
		return MetaProperties{}, err
	}
	if !found {
		mp = MetaProperties{Version: version, ClusterID: clusterID, NodeID: nodeID}
		if version != 0 {
			mp.DirectoryID = newDirectoryID()
		}
		if err := writeFileAtomic(path, mp.encode(time.Now())); err != nil {
			return MetaProperties{}, fmt.Errorf("log dir %s: %w", dir, err)
		}
		return mp, nil
	}
	if mp.NodeID != nodeID {
		return mp, fmt.Errorf("%w: %s has node.id=%d but this broker is configured with node.id=%d; "+
			"point log.dirs at this node's own directories", ErrMetaPropertiesMismatch, path, mp.NodeID, nodeID)
	}
	if mp.ClusterID != "" && mp.ClusterID != clusterID {
		return mp, fmt.Errorf("%w: %s has cluster.id=%s but this broker's metadata has cluster.id=%s; "+
			"the metadata file may have been lost or replaced", ErrMetaPropertiesMismatch, path, mp.ClusterID, clusterID)
	}
	if version == 0 && mp.Version == 1 {
		old := mp
		mp = MetaProperties{Version: 0, ClusterID: clusterID, NodeID: nodeID}
		if err := writeFileAtomic(path, mp.encode(time.Now())); err != nil {
			return old, fmt.Errorf("log dir %s: rewriting meta.properties as version 0: %w", dir, err)
		}
		if logf != nil {
			logf("rewrote meta.properties as version 0, as a ZooKeeper-mode Kafka broker has it", "file", path, "dropped_directory_id", old.DirectoryID)
		}
	}
	return mp, nil
}

// ReadMetaProperties reads dir's meta.properties; found is false if the
// file does not exist.
func ReadMetaProperties(dir string) (mp MetaProperties, found bool, err error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return MetaProperties{}, false, nil
	}
	if err != nil {
		return MetaProperties{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	props := parseProperties(data)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("read %s: %s", path, fmt.Sprintf(format, args...))
	}
	v := props[metaVersionKey]
	if v == "" {
		v = "0"
	}
	if mp.Version, err = strconv.Atoi(v); err != nil || (mp.Version != 0 && mp.Version != 1) {
		return mp, true, bad("unsupported version %q", v)
	}
	idKey := metaNodeIDKey
	if mp.Version == 0 {
		idKey = metaBrokerIDKey
	}
	id, err := strconv.ParseInt(props[idKey], 10, 32)
	if err != nil {
		return mp, true, bad("%s %q is not a number", idKey, props[idKey])
	}
	mp.NodeID = int32(id)
	mp.ClusterID = props[metaClusterIDKey]
	if mp.Version == 1 && mp.ClusterID == "" {
		return mp, true, bad("cluster.id missing")
	}
	mp.DirectoryID = props[metaDirectoryIDKey]
	return mp, true, nil
}

// encode writes mp as java.util.Properties.store does: a comment line with
// the date, then key=value lines (sorted here, for stable output).
func (mp MetaProperties) encode(now time.Time) []byte {
	kv := map[string]string{metaVersionKey: strconv.Itoa(mp.Version)}
	if mp.ClusterID != "" {
		kv[metaClusterIDKey] = mp.ClusterID
	}
	if mp.Version == 0 {
		kv[metaBrokerIDKey] = strconv.FormatInt(int64(mp.NodeID), 10)
	} else {
		kv[metaNodeIDKey] = strconv.FormatInt(int64(mp.NodeID), 10)
	}
	if mp.DirectoryID != "" {
		kv[metaDirectoryIDKey] = mp.DirectoryID
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	fmt.Fprintf(&b, "#\n#%s\n", now.UTC().Format("Mon Jan 02 15:04:05 MST 2006"))
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, kv[k])
	}
	return b.Bytes()
}

// parseProperties reads the subset of the java.util.Properties text format
// that meta.properties uses: comment lines starting with '#' or '!', and
// "key=value", "key:value" or "key value" lines with surrounding blanks
// ignored. Backslash escapes are decoded for the separator characters and
// backslash itself, which is all Kafka's values (ids) could need.
func parseProperties(data []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimLeft(strings.TrimRight(line, "\r"), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		var key strings.Builder
		i := 0
		for ; i < len(line); i++ {
			c := line[i]
			if c == '\\' && i+1 < len(line) {
				i++
				key.WriteByte(line[i])
				continue
			}
			if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
				break
			}
			key.WriteByte(c)
		}
		rest := strings.TrimLeft(line[i:], " \t\f")
		if rest != "" && (rest[0] == '=' || rest[0] == ':') {
			rest = strings.TrimLeft(rest[1:], " \t\f")
		}
		out[key.String()] = strings.ReplaceAll(rest, `\\`, `\`)
	}
	return out
}

// newDirectoryID returns a random Kafka Uuid string for directory.id,
// avoiding the reserved ids (the first 64 bits zero) and, as Kafka's
// Uuid.randomUuid, strings that start with '-'.
func newDirectoryID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:])
		if [8]byte(b[:8]) == ([8]byte{}) {
			continue
		}
		if s := base64.RawURLEncoding.EncodeToString(b[:]); s[0] != '-' {
			return s
		}
	}
}
