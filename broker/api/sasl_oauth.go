package api

import (
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/network/sasl"
	"github.com/kbroker/kbroker/broker/network/sasl/jwks"
)

// oauthValidators are the OAUTHBEARER validators of the SASL listeners,
// built on first use: one unsecured validator per listener (its JAAS
// options), one JWKS validator shared by the listeners that use it (one
// key cache). A JWKS validator that cannot be built (checked in config)
// leaves its listeners without one: OAUTHBEARER then fails.
type oauthValidators struct {
	once sync.Once
	byL  map[string]sasl.OAuthValidator
}

func (b *API) oauthValidator(listener string) sasl.OAuthValidator {
	b.oauth.once.Do(func() {
		b.oauth.byL = map[string]sasl.OAuthValidator{}
		var shared *jwks.Validator
		for name, l := range b.cfg.SASL.OAuth.Listeners {
			if !l.JWKS {
				b.oauth.byL[name] = sasl.NewUnsecuredValidator(sasl.UnsecuredConfig{
					PrincipalClaim: l.PrincipalClaim, ScopeClaim: l.ScopeClaim, RequiredScope: l.RequiredScope,
					AllowableClockSkew: time.Duration(l.AllowableClockSkewMs) * time.Millisecond, Now: b.now,
				})
				continue
			}
			if shared == nil {
				j := b.cfg.SASL.OAuth.JWKS
				v, err := jwks.New(jwks.Config{URL: j.URL, Refresh: time.Duration(j.RefreshMs) * time.Millisecond,
					ExpectedAudience: j.ExpectedAudience, ExpectedIssuer: j.ExpectedIssuer, SubClaim: j.SubClaim,
					ScopeClaim: j.ScopeClaim, ClockSkew: time.Duration(j.ClockSkewSeconds) * time.Second, Now: b.now})
				if err != nil {
					b.log.Error("OAUTHBEARER JWKS validator", "err", err)
					continue
				}
				shared = v
			}
			b.oauth.byL[name] = shared
		}
	})
	return b.oauth.byL[listener]
}
