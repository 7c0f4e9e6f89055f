package toolchain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// DefaultCacheDir returns ${POLYKUBE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/polykube}.
func DefaultCacheDir() (string, error) {
	if dir := os.Getenv("POLYKUBE_CACHE_DIR"); dir != "" {
		return dir, nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the toolchain cache: %w (set POLYKUBE_CACHE_DIR)", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "polykube"), nil
}

// stamp records that a binary was verified: as long as the file keeps its size and
// modification time, a warm resolution trusts it without running it again.
type stamp struct {
	Tool       string    `json:"tool"`
	Version    string    `json:"version"`
	Path       string    `json:"path"`
	Size       int64     `json:"size"`
	ModTime    time.Time `json:"modTime"`
	VerifiedAt time.Time `json:"verifiedAt"`
}

// newStamp describes the binary at path as verified to be tool at version.
func newStamp(tool, version, path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	return stamp{Tool: tool, Version: version, Path: path, Size: fi.Size(), ModTime: fi.ModTime().UTC(), VerifiedAt: time.Now().UTC()}, nil
}

// fresh reports whether the stamp still describes the file at path: same path, size and
// modification time.
func (s stamp) fresh(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && s.Path == path && s.Size == fi.Size() && s.ModTime.Equal(fi.ModTime().UTC())
}

// readStamp reads a stamp file; a missing or unreadable stamp is the zero stamp.
func readStamp(file string) stamp {
	var s stamp
	data, err := os.ReadFile(file)
	if err == nil {
		_ = json.Unmarshal(data, &s)
	}
	return s
}

// write stores the stamp atomically (temp file + rename).
func (s stamp) write(file string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".stamp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// lockPollInterval is how often a waiting run retries a held lock.
const lockPollInterval = 250 * time.Millisecond

// lockFile takes an exclusive flock on file, waiting until it is free or ctx ends. It tells
// w once when it has to wait. The lock is released by the returned func or when the
// process exits, so a killed build never leaves a stale lock behind.
func lockFile(ctx context.Context, file string, w io.Writer) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", file, err)
	}
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", file, err)
		}
		if !told && w != nil {
			fmt.Fprintf(w, "  … waiting for %s (another run is building this tool)\n", file)
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for lock %s: %w", file, context.Cause(ctx))
		case <-time.After(lockPollInterval):
		}
	}
}
