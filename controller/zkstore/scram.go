package zkstore

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkdata"
)

// SCRAM credentials are user configs, /config/users/<sanitized user>, one
// key per mechanism, in Kafka's ScramCredentialUtils string form:
// "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>".

// EncodeScram is Kafka's credential string.
func EncodeScram(c controller.ScramCredential) string {
	enc := base64.StdEncoding.EncodeToString
	return "salt=" + enc(c.Salt) + ",stored_key=" + enc(c.StoredKey) + ",server_key=" + enc(c.ServerKey) +
		",iterations=" + strconv.Itoa(int(c.Iterations))
}

// DecodeScram parses Kafka's credential string.
func DecodeScram(s string) (controller.ScramCredential, error) {
	var c controller.ScramCredential
	seen := 0
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("scram credential %q: %q is not key=value", s, kv)
		}
		var err error
		switch k {
		case "salt":
			c.Salt, err = base64.StdEncoding.DecodeString(v)
		case "stored_key":
			c.StoredKey, err = base64.StdEncoding.DecodeString(v)
		case "server_key":
			c.ServerKey, err = base64.StdEncoding.DecodeString(v)
		case "iterations":
			var n int64
			n, err = strconv.ParseInt(v, 10, 32)
			c.Iterations = int32(n)
		default:
			continue
		}
		if err != nil {
			return c, fmt.Errorf("scram credential %q: %s: %w", s, k, err)
		}
		seen++
	}
	if seen != 4 {
		return c, fmt.Errorf("scram credential %q: missing fields", s)
	}
	return c, nil
}

// Sanitize is Kafka's Sanitizer.sanitize for entity names in znode paths:
// Java's URLEncoder (which keeps '*' and escapes '~'), then %20 for
// spaces and %2A for '*'.
func Sanitize(name string) string {
	s := url.QueryEscape(name)
	s = strings.ReplaceAll(s, "+", "%20")
	s = strings.ReplaceAll(s, "*", "%2A")
	s = strings.ReplaceAll(s, "~", "%7E")
	return s
}

// Desanitize reverses Sanitize.
func Desanitize(s string) (string, error) { return url.PathUnescape(s) }

func isScram(mech string) bool { return strings.HasPrefix(mech, "SCRAM-") }

func (s *Store) userConfig(user string) (map[string]string, int32, error) {
	data, stat, err := s.zk.Get(zkdata.ConfigEntityPath(zkdata.ConfigEntityUsers, Sanitize(user)))
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]string{}, -2, nil
	}
	if err != nil {
		return nil, 0, err
	}
	cfg, err := zkdata.DecodeConfigEntity(data)
	return cfg, stat.Version, err
}

// ScramCredential implements controller.Store.
func (s *Store) ScramCredential(user, mechanism string) (controller.ScramCredential, bool) {
	cfg, _, err := s.userConfig(user)
	if err != nil {
		return controller.ScramCredential{}, false
	}
	v, ok := cfg[mechanism]
	if !ok {
		return controller.ScramCredential{}, false
	}
	c, err := DecodeScram(v)
	return c, err == nil
}

// ScramCredentials implements controller.Store.
func (s *Store) ScramCredentials() map[string]map[string]controller.ScramCredential {
	out := map[string]map[string]controller.ScramCredential{}
	children, _, err := s.zk.Children(zkdata.ConfigPath + "/" + zkdata.ConfigEntityUsers)
	if err != nil {
		return out
	}
	sort.Strings(children)
	for _, ch := range children {
		user, err := Desanitize(ch)
		if err != nil {
			continue
		}
		cfg, _, err := s.userConfig(user)
		if err != nil {
			continue
		}
		for mech, v := range cfg {
			if !isScram(mech) {
				continue
			}
			if c, err := DecodeScram(v); err == nil {
				if out[user] == nil {
					out[user] = map[string]controller.ScramCredential{}
				}
				out[user][mech] = c
			}
		}
	}
	return out
}

// AlterScramCredentials implements controller.Store. Every change is
// checked before anything is written (deleting a credential that does not
// exist fails the whole call); each user's config is then written with a
// version check and announced in /config/changes.
func (s *Store) AlterScramCredentials(changes []controller.ScramChange) error {
	byUser := map[string][]controller.ScramChange{}
	var users []string
	for _, ch := range changes {
		if _, ok := byUser[ch.User]; !ok {
			users = append(users, ch.User)
		}
		byUser[ch.User] = append(byUser[ch.User], ch)
	}
	type write struct {
		user    string
		cfg     map[string]string
		version int32
	}
	var writes []write
	for _, u := range users {
		cfg, version, err := s.userConfig(u)
		if err != nil {
			return err
		}
		for _, ch := range byUser[u] {
			if ch.Delete {
				if _, ok := cfg[ch.Mechanism]; !ok {
					return fmt.Errorf("no %s credential for user %q", ch.Mechanism, ch.User)
				}
				delete(cfg, ch.Mechanism)
				continue
			}
			cfg[ch.Mechanism] = EncodeScram(ch.Credential)
		}
		writes = append(writes, write{u, cfg, version})
	}
	for _, w := range writes {
		data, err := zkdata.EncodeConfigEntity(w.cfg)
		if err != nil {
			return err
		}
		path := zkdata.ConfigEntityPath(zkdata.ConfigEntityUsers, Sanitize(w.user))
		if w.version == -2 {
			_, err = s.zk.CreateWithParents(path, data, 0)
		} else {
			_, err = s.zk.Set(path, data, w.version)
		}
		if err != nil {
			return fmt.Errorf("writing credentials of %q: %w", w.user, err)
		}
		note, err := zkdata.EncodeConfigChange(zkdata.ConfigEntityUsers + "/" + Sanitize(w.user))
		if err != nil {
			return err
		}
		if _, err := s.zk.CreateWithParents(zkdata.ConfigChangeSeqPath(), note, zk.FlagSequence); err != nil {
			return err
		}
	}
	return nil
}
