package chaos

// excusedLate reports whether b's belief, begun while an earlier hold's
// went on, is one a window allows: b's acquire was called before the
// window ended, its reply came after the window opened (Redis granted it
// before the fault, a ForceUnlock say, and told it after), and b ended by
// Lost within the window's grace, as excused allows for the earlier hold.
func excusedLate(b *holdRec, name string, ws []window) bool {
	if b.endHow != "lost" {
		return false
	}
	for _, w := range ws {
		if (w.name == "" || w.name == name) && b.called <= w.to && w.from <= b.start && b.end <= w.to+w.grace {
			return true
		}
	}
	return false
}
