package api

// UpdateFeatures v0–v2 and the features ApiVersions v3+ reports (KIP-584).
// v1 replaced AllowDowngrade with UpgradeType (1 upgrade, 2 safe downgrade,
// 3 unsafe downgrade) and added ValidateOnly; v2 dropped the per-feature
// results. As Kafka's FeatureControlManager: the update is all or nothing;
// the first feature that fails answers the whole request with
// INVALID_UPDATE_VERSION and "The update failed for all features since the
// following feature had an error: Invalid update version N for feature F.
// <reason>" and no per-feature rows; a success has one NONE row per feature
// below v2.
//
// kbroker's features: transaction.version 0–2 (finalized 2: KIP-890 part 2,
// which Java clients read from ApiVersions to choose EndTxn v5 and implicit
// partition adds) and group.version 0–1 (finalized 1: KIP-848; at 0
// ConsumerGroupHeartbeat answers UNSUPPORTED_VERSION, as Kafka's KafkaApis
// does when the consumer rebalance protocol is off). It is not a
// KRaft cluster, so metadata.version and kraft.version are not features here,
// as on a ZooKeeper-mode Kafka; updating them is refused like any feature
// the node does not support. Finalized levels live in the metadata store.

import (
	"fmt"
	"sort"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// feature is one feature this broker supports, with its default finalized level.
type feature struct {
	name       string
	min, max   int16
	defaultLvl int16
}

// features is sorted by name.
var features = []feature{
	{name: "group.version", min: 0, max: 1, defaultLvl: 1},
	{name: "transaction.version", min: 0, max: 2, defaultLvl: 2},
}

func featureByName(name string) (feature, bool) {
	for _, f := range features {
		if f.name == name {
			return f, true
		}
	}
	return feature{}, false
}

// finalizedFeatures are the current finalized levels (features at level 0
// are absent) and their epoch.
func (b *API) finalizedFeatures() (map[string]int16, int64) {
	levels, epoch, set := b.store.FinalizedFeatures()
	if !set {
		levels = map[string]int16{}
		for _, f := range features {
			levels[f.name] = f.defaultLvl
		}
	}
	// Kafka's epoch is the metadata offset of the last feature record; ours
	// starts at 1 for the defaults and counts updates.
	return levels, epoch + 1
}

// fillFeatures sets ApiVersions v3+'s supported and finalized features.
func (b *API) fillFeatures(resp *kmsg.ApiVersionsResponse) {
	for _, f := range features {
		resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{Name: f.name, MinVersion: f.min, MaxVersion: f.max})
	}
	levels, epoch := b.finalizedFeatures()
	resp.FinalizedFeaturesEpoch = epoch
	names := make([]string, 0, len(levels))
	for n := range levels {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if l := levels[n]; l > 0 {
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, kmsg.ApiVersionsResponseFinalizedFeature{Name: n, MinVersionLevel: l, MaxVersionLevel: l})
		}
	}
}

// Kafka's FeatureUpdate.UpgradeType.
const (
	upgradeUnknown         int8 = 0
	upgradeUpgrade         int8 = 1
	upgradeSafeDowngrade   int8 = 2
	upgradeUnsafeDowngrade int8 = 3
)

func (b *API) handleUpdateFeatures(_ *network.RequestContext, req *kmsg.UpdateFeaturesRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	fail := func(e *kerr.Error, msg string) kmsg.Response {
		resp.ErrorCode = e.Code
		resp.ErrorMessage = &msg
		return resp
	}
	b.featuresMu.Lock()
	defer b.featuresMu.Unlock()
	cur, _ := b.finalizedFeatures()
	next := make(map[string]int16, len(cur))
	for k, v := range cur {
		next[k] = v
	}
	seen := map[string]bool{}
	for _, u := range req.FeatureUpdates {
		if seen[u.Feature] {
			return fail(kerr.InvalidRequest, fmt.Sprintf("Feature %s appears more than once in the request.", u.Feature))
		}
		seen[u.Feature] = true
		typ := u.UpgradeType
		if req.Version == 0 {
			typ = upgradeUpgrade
			if u.AllowDowngrade {
				typ = upgradeSafeDowngrade
			}
		}
		if reason := b.checkFeatureUpdate(u.Feature, u.MaxVersionLevel, typ, cur[u.Feature]); reason != "" {
			return fail(kerr.InvalidUpdateVersion, fmt.Sprintf("The update failed for all features since the following feature had an error: Invalid update version %d for feature %s. %s", u.MaxVersionLevel, u.Feature, reason))
		}
		next[u.Feature] = u.MaxVersionLevel
	}
	if !req.ValidateOnly && len(req.FeatureUpdates) > 0 {
		if err := b.store.UpdateFinalizedFeatures(next); err != nil {
			b.log.Error("storing finalized features", "err", err)
			return fail(kerr.UnknownServerError, "Failed to store the finalized features.")
		}
	}
	if req.Version < 2 {
		none := "NONE"
		for _, u := range req.FeatureUpdates {
			resp.Results = append(resp.Results, kmsg.UpdateFeaturesResponseResult{Feature: u.Feature, ErrorMessage: &none})
		}
	}
	return resp
}

// checkFeatureUpdate is FeatureControlManager.updateFeature's validation:
// a known upgrade type, a level not below 0 and within what this node
// supports, and a downgrade only with a downgrade type (and an upgrade only
// without one). It returns Kafka's reason, or "".
func (b *API) checkFeatureUpdate(name string, level int16, typ int8, current int16) string {
	if typ < upgradeUpgrade || typ > upgradeUnsafeDowngrade {
		return "The controller does not support the given upgrade type."
	}
	if level < 0 {
		return "A feature version cannot be less than 0."
	}
	f, ok := featureByName(name)
	switch {
	case !ok && level != 0:
		return fmt.Sprintf("Local controller %d does not support this feature.", b.cfg.NodeID)
	case ok && (level < f.min || level > f.max):
		return fmt.Sprintf("Local controller %d only supports versions %d-%d", b.cfg.NodeID, f.min, f.max)
	}
	switch {
	case level < current && typ == upgradeUpgrade:
		return "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
	case level > current && typ != upgradeUpgrade:
		return "Can't downgrade to a newer version."
	}
	return ""
}

// consumerProtocolEnabled reports whether group.version enables the KIP-848
// consumer rebalance protocol (level 1 and up).
func (b *API) consumerProtocolEnabled() bool {
	levels, _ := b.finalizedFeatures()
	return levels["group.version"] >= 1
}

// consumerProtocolDisabled is Kafka's answer to ConsumerGroupHeartbeat when
// group.version is 0.
func consumerProtocolDisabled(req *kmsg.ConsumerGroupHeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	msg := "The version of API is not supported."
	resp.ErrorMessage = &msg
	return resp
}
