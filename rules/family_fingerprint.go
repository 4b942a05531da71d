package rules

// Fingerprint anomaly rules. They are decided by package fingerprint,
// which compares a trace's behaviour profile with the skill's stored
// fingerprint (docs/fingerprints.md): a single timeline never shows them,
// so their matchers find nothing, and the fingerprint store adds their
// findings through Input.Extra before the verdict.
func fingerprintRules() {
	for _, x := range []struct{ id, title, help string }{
		{"SBX-FP-001", "New file-system access for this skill",
			"The skill touched a path (by class: home secrets, project files, system, temp, its own folder) that its stable fingerprint " +
				"does not hold: medium for planted secrets and other sensitive paths, low otherwise."},
		{"SBX-FP-002", "New network target for this skill",
			"The skill reached a destination (DNS name, host, address and port, by sink) that its stable fingerprint does not hold: " +
				"a skill that starts calling a new host is the shape of a changed version or a remote instruction."},
		{"SBX-FP-003", "New environment access for this skill",
			"The skill referenced, read through /proc/*/environ, or leaked the value of an environment variable its stable " +
				"fingerprint does not hold: medium for secret-looking or planted variables, low otherwise."},
		{"SBX-FP-004", "New program executed by this skill",
			"The skill ran a program, or a program with an argument shape, its stable fingerprint does not hold."},
		{"SBX-FP-005", "New output pattern for this skill",
			"The skill's runs show an output pattern (data, error, redirect, exfiltration) its stable fingerprint does not hold; " +
				"exfiltration (a planted token leaving) is high."},
		{"SBX-FP-006", "Capabilities expanded beyond the baseline",
			"A new version of a known skill does more than the last stable fingerprint of its earlier versions, or one run " +
				"adds capabilities in two or more classes at once."},
	} {
		sev := Medium
		if x.id == "SBX-FP-001" || x.id == "SBX-FP-004" || x.id == "SBX-FP-005" || x.id == "SBX-FP-003" {
			sev = Low
		}
		def(Rule{ID: x.id, Family: "fingerprint", Title: x.title, Severity: sev, Confidence: ConfMedium,
			Technique: "T1195", Help: x.help + " Decided against the fingerprint store (docs/fingerprints.md), " +
				"only with trace --store; the severity shown is the lowest the anomaly takes."},
			func(c *ctx, r *Rule) {})
	}
}
