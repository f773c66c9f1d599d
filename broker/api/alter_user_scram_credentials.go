package api

// AlterUserScramCredentials v0 (KIP-554), validated as Kafka's
// ScramControlManager does: a user named twice in one request (deletions and
// upsertions together) gets DUPLICATE_RESOURCE; an empty name or fewer than
// 4096 or more than 16384 iterations UNACCEPTABLE_CREDENTIAL; a mechanism
// other than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512) UNSUPPORTED_SASL_MECHANISM;
// deleting a credential that does not exist RESOURCE_NOT_FOUND. The valid
// changes are stored together. An upsertion carries the client-computed salt
// and salted password; the store keeps the salt, iterations, StoredKey and
// ServerKey only. Results list deletions, then upsertions, then errors, as
// Kafka does. There is no authorizer yet (Kafka checks ALTER on CLUSTER).
//
// bootstrapScram stores sasl.scram.bootstrap.users at start-up.

import (
	"fmt"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/network/sasl"
	"github.com/kbroker/kbroker/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scramAPIError is a per-user error of AlterUserScramCredentials.
type scramAPIError struct {
	err *kerr.Error
	msg string
}

func (b *API) handleAlterUserSCRAMCredentials(_ *network.RequestContext, req *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	b.scramMu.Lock()
	defer b.scramMu.Unlock()

	var (
		errOrder []string
		errs     = map[string]scramAPIError{}
		deletes  = map[string]controller.ScramChange{}
		upserts  = map[string]controller.ScramChange{}
		// order of first appearance, for stable results
		delOrder, upOrder []string
	)
	fail := func(user string, e *kerr.Error, msg string) {
		if _, ok := errs[user]; !ok {
			errOrder = append(errOrder, user)
		}
		errs[user] = scramAPIError{e, msg}
	}
	const dupMsg = "A user credential cannot be altered twice in the same request"
	for _, d := range req.Deletions {
		if _, failed := errs[d.Name]; failed {
			continue
		}
		if _, ok := deletes[d.Name]; ok {
			delete(deletes, d.Name)
			fail(d.Name, kerr.DuplicateResource, dupMsg)
			continue
		}
		m, e := validateScramUser(d.Name, d.Mechanism)
		if e == nil {
			if _, ok := b.store.ScramCredential(d.Name, m.Name); !ok {
				e = &scramAPIError{kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist"}
			}
		}
		if e != nil {
			fail(d.Name, e.err, e.msg)
			continue
		}
		deletes[d.Name] = controller.ScramChange{User: d.Name, Mechanism: m.Name, Delete: true}
		delOrder = append(delOrder, d.Name)
	}
	for _, u := range req.Upsertions {
		if _, failed := errs[u.Name]; failed {
			continue
		}
		_, isDel := deletes[u.Name]
		_, isUp := upserts[u.Name]
		if isDel || isUp {
			delete(deletes, u.Name)
			delete(upserts, u.Name)
			fail(u.Name, kerr.DuplicateResource, dupMsg)
			continue
		}
		m, e := validateScramUser(u.Name, u.Mechanism)
		switch {
		case e != nil:
		case u.Iterations < config.ScramMinIterations:
			e = &scramAPIError{kerr.UnacceptableCredential, "Too few iterations"}
		case u.Iterations > config.ScramMaxIterations:
			e = &scramAPIError{kerr.UnacceptableCredential, "Too many iterations"}
		}
		if e != nil {
			fail(u.Name, e.err, e.msg)
			continue
		}
		upserts[u.Name] = controller.ScramChange{User: u.Name, Mechanism: m.Name,
			Credential: controller.ScramCredential(m.CredentialFromSalted(u.Salt, u.SaltedPassword, u.Iterations))}
		upOrder = append(upOrder, u.Name)
	}

	var changes []controller.ScramChange
	var ok []string
	for _, lists := range [][]string{delOrder, upOrder} {
		for _, name := range lists {
			if ch, found := deletes[name]; found && ch.Delete {
				changes, ok = append(changes, ch), append(ok, name)
			} else if ch, found := upserts[name]; found {
				changes, ok = append(changes, ch), append(ok, name)
			}
		}
	}
	var storeErr error
	if len(changes) > 0 {
		storeErr = b.store.AlterScramCredentials(changes)
		if storeErr != nil {
			b.log.Error("storing SCRAM credentials failed", "err", storeErr)
		}
	}
	for _, name := range ok {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = name
		if storeErr != nil {
			r.ErrorCode = kerr.UnknownServerError.Code
			msg := storeErr.Error()
			r.ErrorMessage = &msg
		}
		resp.Results = append(resp.Results, r)
	}
	for _, name := range errOrder {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = name
		r.ErrorCode = errs[name].err.Code
		msg := errs[name].msg
		r.ErrorMessage = &msg
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// validateScramUser checks a user name and mechanism number.
func validateScramUser(name string, kind int8) (*sasl.ScramMech, *scramAPIError) {
	if name == "" {
		return nil, &scramAPIError{kerr.UnacceptableCredential, "Username must not be empty"}
	}
	m := sasl.ScramMechByKind(kind)
	if m == nil {
		return nil, &scramAPIError{kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism"}
	}
	return m, nil
}

// BootstrapScram stores each sasl.scram.bootstrap.users credential whose
// user has none for that mechanism yet. Like `kafka-storage format
// --add-scram` it seeds a fresh broker; a credential changed later with
// AlterUserScramCredentials is not overwritten at the next start.
func (b *API) BootstrapScram() error {
	var changes []controller.ScramChange
	for _, u := range b.cfg.SASL.BootstrapScram {
		if _, ok := b.store.ScramCredential(u.Name, u.Mechanism); ok {
			continue
		}
		cred, err := sasl.BootstrapCredential(u)
		if err != nil {
			return fmt.Errorf("config %s: user %s: %w", config.KeyScramBootstrap, u.Name, err)
		}
		changes = append(changes, controller.ScramChange{User: u.Name, Mechanism: u.Mechanism, Credential: controller.ScramCredential(cred)})
	}
	if len(changes) == 0 {
		return nil
	}
	if err := b.store.AlterScramCredentials(changes); err != nil {
		return fmt.Errorf("storing %s: %w", config.KeyScramBootstrap, err)
	}
	for _, ch := range changes {
		b.log.Info("stored bootstrap SCRAM credential", "user", ch.User, "mechanism", ch.Mechanism)
	}
	return nil
}
