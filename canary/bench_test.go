package canary_test

// The benchmarks use only what the canary package offered before keys
// (NewSet, Find, the Minter), so that testdata/bench-compare.sh can run them
// against an older version in the same run; BenchmarkFindKeyed is in
// keyed_bench_test.go.

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/klauspost/compress/zstd"
	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/ulikunitz/xz"
)

func BenchmarkFind(b *testing.B) { benchFind(b, mixOld, nil) }

// BenchmarkFindText is the same without base64 blobs and binary: the cost
// of the single scanning pass and the run finder alone.
func BenchmarkFindText(b *testing.B) { benchFind(b, mixText, nil) }

// BenchmarkFindMixed adds what the newer decoders open to the mixed
// traffic: xz, zstd and raw-deflate blobs, UTF-16 text, short-wrapped
// base64, ascii85 frames, XORed binary.
func BenchmarkFindMixed(b *testing.B) { benchFind(b, mixNew, nil) }

// Traffic mixes of benchFind.
const (
	mixText = iota
	mixOld
	mixNew
)

func benchFind(b *testing.B, mix int, with func(*canary.Set) *canary.Set) {
	m := canary.NewMinter(canary.SeededReader([]byte("bench")))
	kinds := []canary.Kind{canary.AWSAccessKey, canary.AWSSecretKey, canary.GitHubToken, canary.OpenAIKey,
		canary.AnthropicKey, canary.SlackToken, canary.StripeKey, canary.NPMToken, canary.HuggingFaceToken,
		canary.DatabaseURL, canary.Password, canary.BrowserCookie, canary.SeedPhrase, canary.SSHPrivateKey}
	var toks []canary.Token
	for i := range 200 {
		toks = append(toks, m.Mint(kinds[i%len(kinds)], "x"))
	}
	set := canary.NewSet(toks...)
	if with != nil {
		set = with(set)
	}
	// 10 MiB of mixed traffic: HTTP-ish text, JSON, base64 blobs, binary.
	var buf bytes.Buffer
	words := strings.Fields("GET POST HTTP/1.1 Host: api.example.com Content-Type: application/json the of and to in is " +
		"function return const let var if else for while {\"id\":42,\"name\":\"value\"} 0x7fff 12345 /usr/lib/x86_64-linux-gnu")
	text := func() []byte {
		var t bytes.Buffer
		for range 100 {
			t.WriteString(words[m.Intn(len(words))])
			t.WriteByte(" \n"[m.Intn(2)])
		}
		return t.Bytes()
	}
	for buf.Len() < 10<<20 {
		k := m.Intn(20)
		switch {
		case mix == mixText:
			k = 19
		case mix == mixOld:
			k %= 10
		}
		switch k {
		case 0, 10:
			buf.WriteString(base64.StdEncoding.EncodeToString(m.Bytes(600)) + "\n")
		case 1, 11:
			buf.Write(m.Bytes(512))
		case 12: // compressed text
			var z bytes.Buffer
			w, _ := xz.NewWriter(&z)
			w.Write(text())
			w.Close()
			buf.Write(z.Bytes())
		case 13:
			w, _ := zstd.NewWriter(nil)
			buf.Write(w.EncodeAll(text(), nil))
			w.Close()
		case 14: // PHP's base64_encode(gzdeflate(...))
			var z bytes.Buffer
			w, _ := flate.NewWriter(&z, 6)
			w.Write(text())
			w.Close()
			buf.WriteString(base64.StdEncoding.EncodeToString(z.Bytes()) + "\n")
		case 15: // UTF-16
			for _, c := range utf16.Encode([]rune(string(text()))) {
				buf.Write(binary.LittleEndian.AppendUint16(nil, c))
			}
		case 16: // base64 -w 16
			buf.WriteString(wrapAt(base64.StdEncoding.EncodeToString(m.Bytes(300)), 16, "\n") + "\n")
		case 17: // an ascii85 frame
			buf.WriteString("<~" + wrapAt(string(a85(m.Bytes(300))), 76, "\n") + "~>\n")
		case 18: // XORed text
			buf.Write(xorBytes(text(), 0x5a))
		default:
			buf.Write(text())
		}
	}
	data := buf.Bytes()[:10<<20]
	b.SetBytes(int64(len(data)))
	// On a shared machine wall time overstates the cost: also report
	// throughput per second of this process's CPU time.
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		set.Find(data)
		n++
	}
	if d := cpuTime() - cpu0; d > 0 {
		b.ReportMetric(float64(n)*float64(len(data))/1e6/d.Seconds(), "MB/cpu-s")
	}
}

// a85 is ascii85 without folding.
func a85(b []byte) []byte {
	var out []byte
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	for i := 0; i < len(b); i += 4 {
		v := binary.BigEndian.Uint32(b[i:])
		var g [5]byte
		for j := 4; j >= 0; j-- {
			g[j] = byte('!' + v%85)
			v /= 85
		}
		out = append(out, g[:]...)
	}
	return out
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func xorBytes(b []byte, k byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = c ^ k
	}
	return out
}

// wrapAt breaks s into lines of n characters (find_test.go's wrapLines,
// repeated so that this file stands alone).
func wrapAt(s string, n int, sep string) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + sep)
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}
