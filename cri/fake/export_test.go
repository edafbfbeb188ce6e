package fake

// Attachments returns how many attach sessions follow the output of the
// container with that ID, for tests that must not write before a session
// follows.
func (r *Runtime) Attachments(id string) int {
	r.mu.Lock()
	c, err := r.containers.resolve(id, "container")
	r.mu.Unlock()
	if err != nil {
		return 0
	}
	c.stdio.mu.Lock()
	defer c.stdio.mu.Unlock()
	return len(c.stdio.subs)
}
