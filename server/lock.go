package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LockFile is the file a server holds locked in its data folder.
const LockFile = "serve.lock"

// ErrInUse is returned by New when another server holds the data folder.
var ErrInUse = errors.New("the data folder is in use by another sandboxctl serve")

// lockDir takes the data folder for this process. A second server on the
// same folder would mark the first one's running traces interrupted and
// run its queue twice; the lock goes with the process (kill -9 included).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("serve: lock the data folder: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("serve: %s: %w", dir, ErrInUse)
		}
		return nil, fmt.Errorf("serve: lock the data folder: %w", err)
	}
	return f, nil
}
