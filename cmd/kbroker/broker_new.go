//go:build !faultfs

package main

import (
	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/broker/config"
)

// newBroker is broker.New; a binary built with -tags faultfs (the
// integration tests' own) puts the log dirs on a fault-injecting file
// system instead (faultfs.go).
func newBroker(cfg config.Config) (*broker.Broker, error) { return broker.New(cfg) }
