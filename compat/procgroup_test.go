package compat

import "github.com/kbroker/kbroker/compat/franzsuite"

// groupProcAttr and killProcGroup start client and toolchain processes in
// a process group of their own and kill the whole group (franzsuite's,
// which starts franz-go's test binary the same way).
var (
	groupProcAttr = franzsuite.GroupProcAttr
	killProcGroup = franzsuite.KillProcGroup
)
