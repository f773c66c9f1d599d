package restproxy

// UserClients is the number of user Kafka clients the proxy holds.
func (p *Proxy) UserClients() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.clients)
}
