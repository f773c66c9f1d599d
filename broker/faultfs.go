//go:build faultfs

package broker

import (
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/storage/vfs"
)

// NewWithFS is New with every log dir on fs. It is compiled only with
// -tags faultfs, into the kbroker binary the integration tests build
// (cmd/kbroker/faultfs.go puts the dirs on a fault-injecting file system
// the test switches at run time), so a production binary has no way to be
// handed another file system.
func NewWithFS(cfg config.Config, fs vfs.FS) (*Broker, error) { return newBroker(cfg, fs) }
