package canary

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// base64Runs is base64RunsShort without the short-run probes.
func base64Runs(data []byte) []run { return base64RunsShort(data, nil) }

// base64RunsReference is the plain byte-by-byte run finder that the probing
// base64Runs must agree with.
func base64RunsReference(data []byte) []run {
	var runs []run
	var parts [][2]int // backing store shared by all runs
	var cur run
	from := 0 // where cur's parts start in parts
	flush := func() {
		// Keep what is worth a second look: line-broken runs (to scan
		// joined) and runs long enough to decode.
		if len(parts)-from > 1 || cur.n >= minDecodeRun {
			cur.parts = parts[from:len(parts):len(parts)]
			runs = append(runs, cur)
		} else {
			parts = parts[:from]
		}
		from = len(parts)
		cur = run{}
	}
	n := len(data)
	i := 0
	for i < n {
		// Skip to the next alphabet character.
		for j, c := range data[i:] {
			k := cls[c]
			if k&clsAlpha != 0 {
				i += j
				goto alpha
			}
			if k == clsPad && len(parts) > from {
				flush() // padding ends a run
			}
		}
		break
	alpha:
		start := i
		var flags uint8
		i = n
		for j, c := range data[start:] {
			k := cls[c]
			if k&clsAlpha == 0 {
				i = start + j
				break
			}
			flags |= k
		}
		end := i
		if len(parts) > from {
			// Encoders wrap at a fixed width: every line before this one
			// has the first line's length.
			first, prev := parts[from], parts[len(parts)-1]
			if first[1]-first[0] < minWrap || prev[1]-prev[0] != first[1]-first[0] || !onlyBreaks(data[prev[1]:start]) {
				flush()
			}
		}
		if len(parts) == from && end-start < 16 {
			continue
		}
		parts = append(parts, [2]int{start, end})
		cur.n += end - start
		cur.url = cur.url || flags&clsURL != 0
		cur.std = cur.std || flags&clsStd != 0
		cur.nonHex = cur.nonHex || flags&clsNonHex != 0
	}
	flush()
	return runs
}

// TestRunsDiff compares base64Runs with the reference on random text.
func TestRunsDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alpha := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789+/-_"
	multi := 0
	defer func() { t.Logf("%d runs of 3+ lines", multi) }()
	iters := 3000
	if testing.Short() {
		iters = 300 // the whole count in `make test`
	}
	for iter := range iters {
		var b []byte
		for len(b) < 2000 {
			switch r.IntN(6) {
			case 0:
				b = append(b, '\n')
			case 1:
				b = append(b, ' ')
			case 2:
				b = append(b, '=')
			case 3:
				w := 40 + r.IntN(40)
				for range 2 + r.IntN(4) {
					for range w {
						b = append(b, alpha[r.IntN(len(alpha))])
					}
					seps := []string{"\n", "\r\n", "\\n", " \n", "\n\n", " ", "\t\n  ", ""}
					b = append(b, seps[r.IntN(len(seps))]...)
					if r.IntN(5) == 0 {
						w = r.IntN(80)
					}
				}
			default:
				for range r.IntN(50) {
					b = append(b, alpha[r.IntN(len(alpha))])
				}
			}
		}
		got, want := base64Runs(b), base64RunsReference(b)
		for _, x := range got {
			if len(x.parts) > 2 {
				multi++
			}
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(run{})); diff != "" {
			t.Fatalf("iter %d: runs differ (-old +new):\n%s\n%q", iter, diff, b)
		}
	}
}
