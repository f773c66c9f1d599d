package restproxy

func (p *Proxy) routesV3() {}
