package replica

// Watch is the one wake-up channel of a parked request other than Fetch
// (a ShareFetch, broker/api/share_fetch.go): a watcher, like a parked
// fetch's (fetch_wait.go), on each partition it is added to, signalled by
// their appends, HW moves and state changes, and by whoever else holds it
// (the share host signals it when records are released). The request
// sleeps in a plain select on C, its deadline and shutdown, whatever the
// number of partitions. Signals merge while one is pending.
type Watch struct{ w *fetchWatch }

// NewWatch returns a watch with no partitions.
func NewWatch() *Watch { return &Watch{w: newFetchWatch()} }

// C is the channel that receives the signals.
func (w *Watch) C() <-chan struct{} { return w.w.ch }

// Signal wakes the request without blocking.
func (w *Watch) Signal() { w.w.signal(false) }

// AddWatch makes p's changes signal w; on a closed partition w is
// signalled at once. Add it before reading p, so that a change between
// the read and the wait is not missed.
func (p *Partition) AddWatch(w *Watch) { p.watch(w.w) }

// RemoveWatch stops p's changes from signalling w.
func (p *Partition) RemoveWatch(w *Watch) { p.unwatch(w.w) }
