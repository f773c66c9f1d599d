package api

// DescribeUserScramCredentials v0 (KIP-554), answered as Kafka's ScramImage
// does: a null or empty user list describes every user that has a
// credential; a user named twice gets DUPLICATE_RESOURCE, one without a
// credential RESOURCE_NOT_FOUND, each with Kafka's message. Mechanisms are
// 1 (SCRAM-SHA-256) and 2 (SCRAM-SHA-512); only iteration counts are
// returned. There is no authorizer yet, so the DESCRIBE on CLUSTER check
// Kafka makes always passes.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/network/sasl"
	"github.com/kbroker/kbroker/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleDescribeUserSCRAMCredentials(_ *network.RequestContext, req *kmsg.DescribeUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	creds := b.store.ScramCredentials()

	var users []string
	dup := map[string]bool{}
	if len(req.Users) == 0 {
		users = controller.ScramUsers(creds)
	} else {
		seen := map[string]bool{}
		for _, u := range req.Users {
			if seen[u.Name] {
				dup[u.Name] = true
				continue
			}
			seen[u.Name] = true
			users = append(users, u.Name)
		}
	}
	for _, u := range users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u
		switch {
		case dup[u]:
			r.ErrorCode = kerr.DuplicateResource.Code
			msg := "Cannot describe SCRAM credentials for the same user twice in a single request: " + u
			r.ErrorMessage = &msg
		case len(creds[u]) == 0:
			r.ErrorCode = kerr.ResourceNotFound.Code
			msg := "Attempt to describe a user credential that does not exist: " + u
			r.ErrorMessage = &msg
		default:
			for _, m := range sasl.ScramMechs {
				if c, ok := creds[u][m.Name]; ok {
					ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
					ci.Mechanism = m.Kind
					ci.Iterations = c.Iterations
					r.CredentialInfos = append(r.CredentialInfos, ci)
				}
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}
