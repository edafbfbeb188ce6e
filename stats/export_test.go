package stats

// CPUSamples is the number of CPU samples the provider keeps.
func (p *Provider) CPUSamples() int { return p.cpu.len() }

// VolumeWalks is the number of pods whose last volume walk is kept.
func (p *Provider) VolumeWalks() int { return p.volumes.Len() }
