package docker_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
)

// caScript mints a CA and a localhost leaf with openssl, serves the leaf on
// the container's own loopback, and asks every client the user has (node,
// curl, Python's ssl, pip's vendored certifi) to fetch from it, before and
// after install-ca. It prints one "phase client result" line per check.
const caScript = `set -e
cd /tmp
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=Test Root" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost\n' > ext
openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 -extfile ext 2>/dev/null
openssl s_server -quiet -accept 8443 -cert leaf.pem -key leaf.key -www >/dev/null 2>&1 &
sleep 1
node='require("https").get("https://localhost:8443/",r=>{console.log("ok");process.exit(0)}).on("error",e=>{console.log("fail");process.exit(0)})'
py='import urllib.request
try:
    urllib.request.urlopen("https://localhost:8443/"); print("ok")
except Exception: print("fail")'
certifi='import ssl,urllib.request
from pip._vendor import certifi
try:
    urllib.request.urlopen("https://localhost:8443/", context=ssl.create_default_context(cafile=certifi.where())); print("ok")
except Exception: print("fail")'
for phase in before after; do
  if [ $phase = after ]; then
    # As the orchestrator does: the PEM is copied into the local store first.
    cp /tmp/ca.pem /usr/local/share/ca-certificates/corp-root-ca.crt
    /usr/local/lib/agent/install-ca /usr/local/share/ca-certificates/corp-root-ca.crt
    /usr/local/lib/agent/install-ca /usr/local/share/ca-certificates/corp-root-ca.crt
  fi
  echo "$phase node $(su mwalker -c "node -e '$node'")"
  echo "$phase curl $(su mwalker -c 'curl -s -o /dev/null https://localhost:8443/ && echo ok || echo fail')"
  echo "$phase python $(su mwalker -c "python3 -c '$py'")"
  echo "$phase certifi $(su mwalker -c "python3 -c '$certifi'")"
done
echo "env $(su - mwalker -c env | grep -ciE 'ssl|cert|ca_|node_extra|proxy' || true)"
marker=$(sed -n 2p /tmp/ca.pem)
echo "store-files $(ls /usr/local/share/ca-certificates | wc -l)"
echo "system-copies $(grep -cF "$marker" /etc/ssl/certs/ca-certificates.crt)"
echo "certifi-copies $(grep -c 'BEGIN CERTIFICATE' /usr/lib/python3/dist-packages/pip/_vendor/certifi/cacert.pem)"
`

func TestInstallCA(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	spec := hardened(t, image, trace)
	spec.NoNewPrivileges = false // su needs setuid here; the orchestrator execs as the user instead
	sb := start(t, rt, spec)
	before, _, _ := run(t, sb, "", "grep", "-c", "BEGIN CERTIFICATE", "/usr/lib/python3/dist-packages/pip/_vendor/certifi/cacert.pem")
	out, stderr, code := run(t, sb, "", "bash", "-c", caScript)
	if code != 0 {
		t.Fatalf("ca script exit %d: %s\n%s", code, stderr, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 {
			got[f[0]+" "+f[1]] = f[2]
		} else if len(f) == 2 {
			got[f[0]] = f[1]
		}
	}
	for _, client := range []string{"node", "curl", "python", "certifi"} {
		if got["before "+client] != "fail" {
			t.Errorf("%s trusted the CA before install-ca: %q", client, got["before "+client])
		}
		if got["after "+client] != "ok" {
			t.Errorf("%s does not trust the CA after install-ca: %q", client, got["after "+client])
		}
	}
	if got["env"] != "0" {
		t.Errorf("the user's environment has %s CA/proxy variables", got["env"])
	}
	if got["store-files"] != "1" || got["system-copies"] != "1" {
		t.Errorf("local store holds %s files and the system bundle %s copies of the CA, want 1 and 1", got["store-files"], got["system-copies"])
	}
	// Installed twice, appended once.
	n, err := strconv.Atoi(strings.TrimSpace(before))
	if err != nil {
		t.Fatalf("count certificates in certifi: %q", before)
	}
	if want := strconv.Itoa(n + 1); got["certifi-copies"] != want {
		t.Errorf("pip's certifi holds %s certificates after two installs, want %s", got["certifi-copies"], want)
	}
}
