package canary_test

import (
	"encoding/base64"
	"fmt"

	"github.com/sandboxctl/sandboxctl/canary"
)

func ExampleSet_Find() {
	m := canary.NewMinter(canary.SeededReader([]byte("example")))
	key := m.Mint(canary.AWSAccessKey, "~/.aws/credentials")
	set := canary.NewSet(key)
	body := "d=" + base64.StdEncoding.EncodeToString([]byte("aws_access_key_id = "+key.Value))
	for _, h := range set.Find([]byte(body)) {
		fmt.Println(h.Token.ID, h.Token.Location, h.Encoding)
	}
	// Output: aws_access_key-1 ~/.aws/credentials base64
}

func ExampleSet_FindDNS() {
	m := canary.NewMinter(canary.SeededReader([]byte("example")))
	tok := m.Mint(canary.GitHubToken, "env:GITHUB_TOKEN")
	set := canary.NewSet(tok)
	hexed := fmt.Sprintf("%x", tok.Value)
	names := []string{"0." + hexed[:40] + ".t.example.", "www.example.org.", "1." + hexed[40:] + ".t.example."}
	for _, h := range set.FindDNS(names) {
		fmt.Println(h.Token.ID, h.Encoding, "from query", h.Offset)
	}
	// Output: github_token-1 dns-labels+hex from query 0
}
