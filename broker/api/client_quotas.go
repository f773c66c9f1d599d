package api

// DescribeClientQuotas v0–1 and AlterClientQuotas v0–1 (KIP-546), as
// Kafka 3.9 answers them: quotas of user, client-id and user+client-id
// entities (null names are the defaults) with the keys producer_byte_rate,
// consumer_byte_rate, request_percentage and controller_mutation_rate,
// validated as Kafka does (INVALID_REQUEST with Kafka's message per
// entry); ip entities are refused (kbroker enforces no connection rates).
// The quotas are kept with the metadata (the file store, or /config/users
// and /config/clients in ZooKeeper) and handed to the quota manager,
// which the broker's quota handler enforces (broker/quota). v1 is the
// flexible version; the bodies are the same. Kafka checks DESCRIBE_CONFIGS
// (ALTER_CONFIGS) on CLUSTER; that check belongs to the authorizer.

import (
	"errors"
	"slices"
	"sort"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/quota"
	"github.com/kbroker/kbroker/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SetQuotas gives the API the broker's quota manager and loads it with
// the quotas of the metadata store.
func (b *API) SetQuotas(m *quota.Manager) error {
	b.quotas = m
	return b.ReloadQuotas()
}

// ReloadQuotas reads every quota from the metadata store into the manager
// (at start-up, and in a cluster when another broker changed them).
func (b *API) ReloadQuotas() error {
	if b.quotas == nil {
		return nil
	}
	all := map[quota.Entity]map[string]float64{}
	for path, vals := range b.store.ClientQuotas() {
		e, err := quota.ParsePath(path)
		if err != nil {
			b.log.Warn("ignoring a client quota entity", "err", err)
			continue
		}
		all[e] = vals
	}
	b.quotas.Set(all)
	return nil
}

func (b *API) handleDescribeClientQuotas(_ *network.RequestContext, req *kmsg.DescribeClientQuotasRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	comps := make([]quota.FilterComponent, len(req.Components))
	for i, c := range req.Components {
		comps[i] = quota.FilterComponent{Type: c.EntityType, MatchType: int8(c.MatchType), Match: c.Match}
	}
	f, err := quota.NewFilter(comps, req.Strict)
	if err != nil {
		code := kerr.InvalidRequest.Code
		var ue quota.ErrUnsupportedEntityType
		if errors.As(err, &ue) {
			code = kerr.UnsupportedVersion.Code
		}
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp
	}
	// Entries is null only with an error (the Java client reads it
	// without a check otherwise).
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	var all map[quota.Entity]map[string]float64
	if b.quotas != nil {
		all = b.quotas.Quotas()
	}
	for _, d := range quota.Describe(all, f) {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range d.Entity.Components() {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = c.Type, c.Name
			entry.Entity = append(entry.Entity, ee)
		}
		keys := make([]string, 0, len(d.Values))
		for k := range d.Values {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return slices.Index(quota.DescribeOrder, keys[i]) < slices.Index(quota.DescribeOrder, keys[j])
		})
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, d.Values[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp
}

func (b *API) handleAlterClientQuotas(_ *network.RequestContext, req *kmsg.AlterClientQuotasRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	type valid struct {
		i      int
		entity quota.Entity
		ops    []kmsg.AlterClientQuotasRequestEntryOp
	}
	var ok []valid
	var changes []controller.QuotaChange
	for i, entry := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		comps := make([]quota.Component, len(entry.Entity))
		for j, e := range entry.Entity {
			ee := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = e.Type, e.Name
			re.Entity = append(re.Entity, ee)
			comps[j] = quota.Component{Type: e.Type, Name: e.Name}
		}
		err := alterEntryError(comps, entry.Ops)
		if err != nil {
			msg := err.Error()
			re.ErrorCode, re.ErrorMessage = kerr.InvalidRequest.Code, &msg
		}
		resp.Entries = append(resp.Entries, re)
		if err != nil || req.ValidateOnly {
			continue
		}
		e, _ := quota.EntityOf(comps) // checked by alterEntryError
		ok = append(ok, valid{i, e, entry.Ops})
		for _, op := range entry.Ops {
			changes = append(changes, controller.QuotaChange{Entity: e.Path(), Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
	}
	if len(changes) == 0 {
		return resp
	}
	b.quotaMu.Lock()
	defer b.quotaMu.Unlock()
	if err := b.store.AlterClientQuotas(changes); err != nil {
		b.log.Error("storing client quotas", "err", err)
		msg := "storing the quotas failed: " + err.Error()
		for _, v := range ok {
			resp.Entries[v.i].ErrorCode, resp.Entries[v.i].ErrorMessage = kerr.UnknownServerError.Code, &msg
		}
		return resp
	}
	if b.quotas != nil {
		for _, v := range ok {
			for _, op := range v.ops {
				b.quotas.Alter(v.entity, op.Key, op.Value, op.Remove)
			}
		}
	}
	return resp
}

// alterEntryError checks one AlterClientQuotas entry: its entity, then
// each op (a key named twice is refused, as Kafka does).
func alterEntryError(comps []quota.Component, ops []kmsg.AlterClientQuotasRequestEntryOp) error {
	if _, err := quota.EntityOf(comps); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Key] {
			return errors.New("Duplicate quota key: " + op.Key)
		}
		seen[op.Key] = true
		var err error
		if op.Remove {
			err = quota.ValidateKey(op.Key)
		} else {
			err = quota.ValidateValue(op.Key, op.Value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
