package replica

// The delayed operations, as Kafka's purgatories: the delayed fetch
// (fetch_wait.go) and the acks=all produce (delayed_produce.go) are
// watchers completed by the partition changes they wait for; a parked
// ShareFetch is one too (watch.go).
