package orchestrator

import (
	"archive/tar"
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/trace"
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
	events, err := parseCallLogs(bytes.NewReader(tarball), "/tmp", 0, false, slog.New(slog.DiscardHandler))
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
	events, _ = parseCallLogs(bytes.NewReader(tarball), "/tmp", 1<<20, false, slog.New(slog.DiscardHandler))
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
