package monitor

// assess sets what the report says beyond the cells' verdicts: the
// envelope's outside list and the risk tier, with their actions.
func (r *Report) assess() {
	if r.Envelope != nil {
		r.Envelope = r.envelope(r.Envelope.Declared)
		if a := r.Envelope.action(); a != "" {
			r.Actions = append(r.Actions, a)
		}
	}
	r.setTier()
}
