package netcapture

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPythonStandIn: a script that installed a stub package and uses it as
// the real one goes on to its end, whatever it imports and calls.
func TestPythonStandIn(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	w := wheel("acme-sdk", "2.1.0", nil)
	zr, err := zip.NewReader(bytes.NewReader(w), int64(len(w)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, "acme_sdk/") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		p := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := `
import asyncio
import acme_sdk as sdk
from acme_sdk import Client, load_frame
from acme_sdk.types import Message
from acme_sdk.server.stdio import stdio_server

print(sdk.__version__)
c = Client(api_key="k")
r = c.messages.create(model="m", messages=[{"role": "user", "content": "hi"}])
print("text:[%s] %s" % (r.content[0].text, f"{r.usage.total:>5}"))
df = load_frame("/tmp/x.csv")
rows = 0
for idx, row in df.iterrows():
    rows += 1
assert rows == 2 and len(df) == 0 and "x" not in df and bool(df)
total = df["a"].sum() + 1
assert not (total > 3)
mem = sdk.virtual_memory()
assert round(mem.total / (1024**3), 2) == 0 and int(mem.percent) == 0 and abs(mem.free) is not None
import math
assert math.floor(mem.used) == 0 and "%d%%" % 0 == "0%"
import json
assert json.dumps({"t": mem.total, "n": 1}) == '{"t": null, "n": 1}', json.dumps({"t": mem.total})
class Mine(Message):
    pass
assert isinstance(Mine(), Message)
app = sdk.Server("demo")
@app.tool()
def ping():
    return "pong"
assert ping() == "pong"
with sdk.open("x") as h:
    h.write("y")
async def main():
    async with stdio_server() as (a, b):
        pass
    await c.connect()
asyncio.run(main())
print("reached the end")
`
	cmd := exec.Command(py, "-c", script)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "reached the end") || !strings.Contains(string(out), "2.1.0") {
		t.Fatalf("python3: %v\n%s", err, out)
	}
}

// TestNodeStandIn: the same for an npm stub package.
func TestNodeStandIn(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "node_modules", "acme-sdk", "index.js")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(jsIndex), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
const sdk = require('acme-sdk');
const { Client, Bot } = require('acme-sdk');
(async () => {
  const c = new Client({ apiKey: 'k' });
  const r = await c.messages.create({ model: 'm' });
  const bot = new Bot('token');
  bot.on('message', (m) => m.reply('hi'));
  await sdk.connect();
  for (const x of r.items) { throw new Error('iterated a stand-in'); }
  console.log('text:[' + r.content + ']', ` + "`${r.id}`" + `);
  const wrapped = sdk.middleware(function handler() { return 'h'; });
  if (wrapped() !== 'h') throw new Error('decorator');
  console.log('reached the end');
})().catch((e) => { console.error(e); process.exit(1); });
`
	cmd := exec.Command(node, "-e", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "reached the end") {
		t.Fatalf("node: %v\n%s", err, out)
	}
}
