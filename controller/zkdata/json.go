package zkdata

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping: '<', '>' and '&' are
// written as themselves, as Kafka's Jackson writes them, not as \u003c,
// \u003e and \u0026. Both read the same, but a znode kbroker writes must
// be byte for byte what Kafka writes for the same change (the cluster
// default's entity path is "brokers/<default>"; config values and
// principals may hold any of the three).
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
