package mcptools

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"syscall"
)

// Reproducible randomness (Config.Entropy): the sandbox's randomness comes
// from a seed, so that two traces that run the same commands with the same
// seed get the same random bytes (twin traces). Two sources are covered:
//
//   - getrandom(2): the shim installs a seccomp filter that hands every
//     getrandom of the command (and its descendants) to the tool server,
//     which writes bytes from the calling process's own stream into the
//     caller's buffer (getrandom_linux.go);
//   - /dev/urandom and /dev/random: replaced, at the server's start, by one
//     read-only regular file of deviceSize bytes from the seed.
//
// A process's stream is keyed by the seed, the process's command line and
// how many processes with the same command line asked before it, so that
// twins that run the same commands get the same bytes whatever the
// interleaving of unrelated processes.

// Labels that keep the seed's uses apart.
const (
	labelGetrandom = "getrandom"
	labelDevice    = "device"
)

// deviceSize is the size of the file that replaces /dev/urandom and
// /dev/random. /dev is a 64 MiB tmpfs in a container, charged to the
// container's memory: 8 MiB serves what scripts read from the device (keys,
// passwords, `head -c 1M`, `dd bs=1M count=8`); a read past it gets EOF.
const deviceSize = 8 << 20

// maxGetrandom is the most one getrandom(2) call returns: the kernel caps
// every read and write at MAX_RW_COUNT (INT_MAX & PAGE_MASK, 4 KiB pages).
const maxGetrandom = 0x7ffff000

// getrandom(2)'s flags (linux/random.h); any other bit is EINVAL.
const (
	grndNonblock = 0x1
	grndRandom   = 0x2
	grndInsecure = 0x4
	grndAll      = grndNonblock | grndRandom | grndInsecure
)

// getrandomReply is what getrandom(buf, n, flags) returns on a kernel whose
// pool is ready (always the case once a container runs): the byte count to
// write into buf (n, capped as the kernel caps it), or the errno it fails
// with before touching buf. GRND_NONBLOCK never makes it fail (the pool
// does not block once ready), GRND_RANDOM reads the same pool (since Linux
// 5.6), and GRND_INSECURE with GRND_RANDOM is refused, as the kernel does.
// flags is an unsigned int in the kernel: the register's upper half is
// ignored. The query the vDSO's getrandom makes of its parameters (flags
// ~0) fails with EINVAL, as on a kernel without vDSO getrandom.
func getrandomReply(n, flags uint64) (uint64, syscall.Errno) {
	f := uint32(flags)
	if f&^grndAll != 0 {
		return 0, syscall.EINVAL
	}
	if f&(grndInsecure|grndRandom) == grndInsecure|grndRandom {
		return 0, syscall.EINVAL
	}
	return min(n, maxGetrandom), 0
}

// streamKey is the key of one stream of the seed: label, then the command
// line as /proc/PID/cmdline has it (the arguments, each ended by a NUL),
// then the number of processes with the same command line that came before.
func streamKey(seed []byte, label string, cmdline []byte, index uint64) [32]byte {
	m := hmac.New(sha256.New, seed)
	var b [binary.MaxVarintLen64]byte
	put := func(p []byte) {
		m.Write(b[:binary.PutUvarint(b[:], uint64(len(p)))])
		m.Write(p)
	}
	put([]byte("sandboxctl entropy v1"))
	put([]byte(label))
	put(cmdline)
	m.Write(b[:binary.PutUvarint(b[:], index)])
	var k [32]byte
	m.Sum(k[:0])
	return k
}

// A stream is AES-256 in counter mode under a stream key: the bytes at any
// offset can be computed, so that a process's offset (procStream) advances
// only once the bytes really reached it.
type stream struct {
	block cipher.Block
}

func newStream(key [32]byte) *stream {
	b, err := aes.NewCipher(key[:])
	if err != nil {
		panic(fmt.Sprintf("aes: %v", err)) // a 32-byte key is always valid
	}
	return &stream{block: b}
}

// at fills p with the stream's bytes from offset off.
func (s *stream) at(off uint64, p []byte) {
	var iv [aes.BlockSize]byte
	binary.BigEndian.PutUint64(iv[8:], off/aes.BlockSize)
	ctr := cipher.NewCTR(s.block, iv[:])
	if skip := off % aes.BlockSize; skip > 0 {
		var pad [aes.BlockSize]byte
		ctr.XORKeyStream(pad[:skip], pad[:skip])
	}
	clear(p)
	ctr.XORKeyStream(p, p)
}

// deviceBytes is the content of the file that replaces the random devices.
func deviceBytes(seed []byte, size int) []byte {
	p := make([]byte, size)
	newStream(streamKey(seed, labelDevice, nil, 0)).at(0, p)
	return p
}

// streams hands out the getrandom streams of one tool server: the index of
// a command line is how many processes with that command line asked for a
// stream before, across every call of the server.
type streams struct {
	seed []byte
	mu   sync.Mutex
	seen map[[32]byte]uint64 // sha256 of the command line -> processes so far
}

func newStreams(seed []byte) *streams {
	return &streams{seed: seed, seen: map[[32]byte]uint64{}}
}

// next returns the stream of the next process with cmdline.
func (s *streams) next(cmdline []byte) *stream {
	h := sha256.Sum256(cmdline)
	s.mu.Lock()
	i := s.seen[h]
	s.seen[h] = i + 1
	s.mu.Unlock()
	return newStream(streamKey(s.seed, labelGetrandom, cmdline, i))
}
