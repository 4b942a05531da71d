// Command randprobe is a static Go program (CGO_ENABLED=0) that prints
// what Go's randomness gives it, for the Entropy container test: crypto/rand
// (the vDSO's getrandom on Linux 6.11 and later, keyed by the getrandom
// syscall), math/rand/v2 and map order (both seeded by the runtime from
// the kernel's AT_RANDOM). The main goroutine stays on one thread: the
// vDSO keys one state per thread, in the order threads first draw, so a
// second draw is reproducible only on the thread of the first (a Go
// program whose draws move between threads parts from its twin: the
// documented limit, docs/sandbox.md).
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"runtime"
	"strings"
)

func main() {
	runtime.LockOSThread()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // a probe: the test reads the missing line
	}
	fmt.Println("go-crypto-rand:", hex.EncodeToString(b))
	fmt.Println("go-crypto-rand-text:", rand.Text())
	fmt.Println("go-math-rand:", mrand.Uint64())
	m := map[string]bool{}
	for _, k := range strings.Fields("a b c d e f g h i j k l m n o p") {
		m[k] = true
	}
	var order []string
	for k := range m {
		order = append(order, k)
	}
	fmt.Println("go-map-order:", strings.Join(order, ""))
}
