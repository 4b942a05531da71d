package trace

// Helpers only the tests use.

// Descendants returns every process below pid, depth first.
func (t *ProcessTree) Descendants(pid int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	var walk func(int)
	walk = func(p int) {
		proc := t.Procs[p]
		if proc == nil {
			return
		}
		for _, c := range proc.Children {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				walk(c)
			}
		}
	}
	walk(pid)
	return out
}
