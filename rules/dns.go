package rules

import (
	"math"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// DNS tunnelling: data carried in query names shows as labels that read as
// encoded bytes (high entropy, digits mixed with letters, no words) and as
// many such names under one zone. Zones are registrable domains by the
// public suffix list, so *.github.io pages and S3 buckets are each their own
// zone and a long legal bucket name is not a label under another's.

// A dnsZone is what the trace asked under one registrable domain.
type dnsZone struct {
	zone     string
	long     *trace.Event // first query with a long encoded label
	longName string
	encNames int // distinct names with an encoded-looking label
	encBytes int // bytes of those labels
	first    []*trace.Event
}

func (c *ctx) dnsZones() []*dnsZone {
	zones := map[string]*dnsZone{}
	var order []string
	seen := map[string]bool{}
	for i := range c.events {
		e := &c.events[i]
		d, ok := e.Data.(*trace.DNSQuery)
		if !ok {
			continue
		}
		for _, name := range queryNames(d) {
			if seen[name] {
				continue
			}
			seen[name] = true
			zone, _ := registrable(name)
			sub := strings.TrimSuffix(strings.TrimSuffix(name, zone), ".")
			z := zones[zone]
			if z == nil {
				z = &dnsZone{zone: zone}
				zones[zone] = z
				order = append(order, zone)
			}
			if sub == "" {
				continue
			}
			enc, encLen := false, 0
			for _, l := range strings.Split(sub, ".") {
				if encodedLabel(l) {
					enc = true
					encLen += len(l)
					if len(l) >= 24 && z.long == nil {
						z.long, z.longName = e, name
					}
				}
			}
			if enc {
				z.encNames++
				z.encBytes += encLen
				if len(z.first) < MaxEvidence {
					z.first = append(z.first, e)
				}
			}
		}
	}
	out := make([]*dnsZone, 0, len(order))
	for _, z := range order {
		out = append(out, zones[z])
	}
	return out
}

// encodedLabel reports a DNS label (or a hyphen-separated part of one)
// that reads as encoded data rather than a name: at least 12 characters of
// hex with digits and letters, or of base32/base36/base64url with digits,
// letters and enough entropy, and no run of letters that makes a word.
func encodedLabel(l string) bool {
	for _, part := range strings.FieldsFunc(l, func(r rune) bool { return r == '-' || r == '_' }) {
		if encodedPart(part) {
			return true
		}
	}
	return false
}

func encodedPart(p string) bool {
	if len(p) < 12 {
		return false
	}
	digits, letters, upper, hex := 0, 0, 0, true
	for i := 0; i < len(p); i++ {
		ch := p[i]
		switch {
		case ch >= '0' && ch <= '9':
			digits++
		case ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z':
			letters++
			if ch <= 'Z' {
				upper++
			}
			if !(ch >= 'a' && ch <= 'f' || ch >= 'A' && ch <= 'F') {
				hex = false
			}
		default:
			return false
		}
	}
	if letters == 0 {
		return false
	}
	if hex && len(p) >= 16 && digits*5 >= len(p) && letters >= 2 {
		return true // hex: digits and a few letters
	}
	mixedCase := upper >= 3 && letters-upper >= 3 && len(p) >= 16
	if digits*10 < len(p) && !mixedCase {
		return false // names carry few digits; base64 of text mixes case instead
	}
	return entropy(p) >= entropyFloor(len(p)) && wordiness(p)*2 < len(p)
}

// entropyFloor is the Shannon entropy (bits per character) below which a
// label of n characters does not look random: random base32/base36 text of
// that length stays above it.
func entropyFloor(n int) float64 {
	return math.Min(3.4, math.Log2(float64(n))*0.82)
}

func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[strings.ToLower(s[i : i+1])[0]]++
	}
	h := 0.0
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// wordiness counts the characters that sit in runs of five or more letters
// with a vowel every few characters, as words do.
func wordiness(s string) int {
	total, cur, sinceVowel := 0, 0, 0
	flush := func() {
		if cur >= 5 {
			total += cur
		}
		cur, sinceVowel = 0, 0
	}
	for i := 0; i < len(s); i++ {
		ch := s[i] | 0x20
		if ch < 'a' || ch > 'z' {
			flush()
			continue
		}
		if strings.IndexByte("aeiouy", ch) >= 0 {
			sinceVowel = 0
		} else if sinceVowel++; sinceVowel > 3 {
			flush()
			continue
		}
		cur++
	}
	flush()
	return total
}

// queryNames are the names a DNS query asked for (its name and every
// question's), lower-case, without the root dot, each once.
func queryNames(d *trace.DNSQuery) []string {
	var out []string
	add := func(n string) {
		n = strings.ToLower(strings.TrimSuffix(n, "."))
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	add(d.Name)
	for _, q := range d.Questions {
		n, _, _ := strings.Cut(q, " ")
		add(n)
	}
	return out
}
