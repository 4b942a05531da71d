package canaryfs_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/url"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/canary"
)

// TestExfiltrationShapes plays the ways stealers ship the home's files and
// checks that detection names the right tokens in each.
func TestExfiltrationShapes(t *testing.T) {
	h := build(t, "fixture")
	content := func(p string) []byte { return file(t, h, p) }
	tarGz := func(paths ...string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		for _, p := range paths {
			c := content(p)
			tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(p, "~/"), Mode: 0o600, Size: int64(len(c))})
			tw.Write(c)
		}
		tw.Close()
		zw.Close()
		return buf.Bytes()
	}
	zipOf := func(paths ...string) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, p := range paths {
			w, _ := zw.Create(strings.TrimPrefix(p, "~/"))
			w.Write(content(p))
		}
		zw.Close()
		return buf.Bytes()
	}
	multi := func(p string) []byte {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		w, _ := mw.CreateFormFile("file", "credentials")
		w.Write(content(p))
		mw.Close()
		return buf.Bytes()
	}
	jsonBody := func(paths ...string) []byte {
		m := map[string]string{}
		for _, p := range paths {
			m[p] = string(content(p))
		}
		b, _ := json.Marshal(m)
		return b
	}
	awsKey, _ := h.Token("~/.aws/credentials", canary.AWSAccessKey)
	dnsNames := func(v string) []string {
		var out []string
		x := hex.EncodeToString([]byte(v))
		for i := 0; i < len(x); i += 30 {
			out = append(out, fmt.Sprintf("%d.%s.c2.example.", i/30, x[i:min(i+30, len(x))]))
		}
		return out
	}
	tests := []struct {
		name string
		data []byte
		dns  []string
		want []string // locations whose every token must be seen
	}{
		{name: "tar czf ~/.ssh ~/.aws | base64", data: []byte(base64.StdEncoding.EncodeToString(tarGz("~/.ssh/id_ed25519", "~/.ssh/id_rsa", "~/.aws/credentials"))),
			want: []string{"~/.ssh/id_ed25519", "~/.ssh/id_rsa", "~/.aws/credentials"}},
		{name: "zip of wallets", data: zipOf("~/.config/solana/id.json", "~/.electrum/wallets/default_wallet", "~/.bitcoin/wallet.dat"),
			want: []string{"~/.config/solana/id.json", "~/.electrum/wallets/default_wallet", "~/.bitcoin/wallet.dat"}},
		{name: "curl -F file=@~/.aws/credentials", data: multi("~/.aws/credentials"), want: []string{"~/.aws/credentials"}},
		{name: "JSON body of agent configs", data: jsonBody("~/.claude.json", "~/.clawdbot/.env", "~/.openclaw/openclaw.json"),
			want: []string{"~/.claude.json", "~/.clawdbot/.env", "~/.openclaw/openclaw.json"}},
		{name: "Chrome Login Data uploaded raw", data: content("~/.config/google-chrome/Default/Login Data"),
			want: []string{"~/.config/google-chrome/Default/Login Data"}},
		{name: "Cookies DB gzipped", data: func() []byte {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write(content("~/.config/google-chrome/Default/Cookies"))
			zw.Close()
			return buf.Bytes()
		}(), want: []string{"~/.config/google-chrome/Default/Cookies"}},
		{name: "env in a query string", data: []byte("GET /c?d=" + url.QueryEscape(strings.Join(h.Env, "\n")) + " HTTP/1.1"),
			want: []string{"env:OPENAI_API_KEY", "env:AWS_SECRET_ACCESS_KEY", "env:DATABASE_URL", "env:AWS_SESSION_TOKEN"}},
		{name: "history grep", data: content("~/.zsh_history"), want: []string{"~/.zsh_history"}},
		{name: "AWS key over DNS", dns: dnsNames(awsKey.Value)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits []canary.Hit
			if tt.dns != nil {
				hits = h.Set.FindDNS(tt.dns)
				if len(hits) != 1 || hits[0].Token.ID != awsKey.ID {
					t.Errorf("FindDNS = %v, want %s", hits, awsKey.ID)
				}
				return
			}
			hits = h.Set.Find(tt.data)
			seen := map[string]bool{}
			for _, hit := range hits {
				seen[hit.Token.ID] = true
			}
			for _, loc := range tt.want {
				n := 0
				for _, tok := range h.Set.Tokens() {
					if tok.Location != loc {
						continue
					}
					n++
					if !seen[tok.ID] {
						t.Errorf("%s (%s) from %s not seen; hits: %v", tok.ID, tok.Kind, loc, hits)
					}
				}
				if n == 0 {
					t.Errorf("no token planted at %s", loc)
				}
			}
		})
	}
}
