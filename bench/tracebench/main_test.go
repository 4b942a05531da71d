package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTookLines(t *testing.T) {
	tests := []struct {
		name string
		log  string
		want []step
	}{
		{name: "phase", log: `time=x level=DEBUG msg=phase trace=t1 name=jail took=612.5ms`,
			want: []step{{name: "phase jail", took: 612500 * time.Microsecond}}},
		{name: "quoted message", log: `level=DEBUG msg="sandbox: setup exec" took=1.2s`,
			want: []step{{name: "sandbox: setup exec", took: 1200 * time.Millisecond}}},
		{name: "quoted phase", log: `level=DEBUG msg=phase trace=t1 name="first call" took=411ms`,
			want: []step{{name: "phase first call", took: 411 * time.Millisecond}}},
		{name: "no duration", log: "level=DEBUG msg=phase name=jail\nlevel=WARN msg=x took=soon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tookLines(tt.log)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(step{})); diff != "" {
				t.Errorf("tookLines mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
