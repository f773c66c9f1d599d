package config

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEveryConfigHasTypeAndDoc checks that DescribeConfigs has a Kafka type
// and documentation for every broker property and topic config it reports.
func TestEveryConfigHasTypeAndDoc(t *testing.T) {
	valid := map[kmsg.ConfigType]bool{
		kmsg.ConfigTypeBoolean: true, kmsg.ConfigTypeString: true, kmsg.ConfigTypeInt: true,
		kmsg.ConfigTypeShort: true, kmsg.ConfigTypeLong: true, kmsg.ConfigTypeDouble: true,
		kmsg.ConfigTypeList: true, kmsg.ConfigTypeClass: true, kmsg.ConfigTypePassword: true,
	}
	for _, k := range PropertyNames() {
		typ, doc, ok := BrokerConfigDoc(k)
		if !ok || !valid[typ] || doc == "" {
			t.Errorf("broker property %s: type %v, doc %q", k, typ, doc)
		}
	}
	for _, d := range TopicConfigs {
		if !valid[d.Type] || d.Doc == "" {
			t.Errorf("topic config %s: type %v, doc %q", d.Name, d.Type, d.Doc)
		}
	}
	if typ, _, _ := BrokerConfigDoc("log.retention.ms"); typ != kmsg.ConfigTypeLong {
		t.Errorf("log.retention.ms is %v, Kafka says LONG", typ)
	}
	if typ, _, _ := BrokerConfigDoc("offsets.topic.replication.factor"); typ != kmsg.ConfigTypeShort {
		t.Errorf("offsets.topic.replication.factor is %v, Kafka says SHORT", typ)
	}
}
