package toolchain

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// downloadTool fetches t's upstream release (a plain binary, or one file of a .tar.gz or
// .zip), then verifies and installs it like a build. The binary is trusted because it runs
// and reports the pinned version; upstream checksums are not checked.
func (tc *Toolchain) downloadTool(ctx context.Context, t *Tool) (Resolved, error) {
	url, member := t.url(runtime.GOOS, runtime.GOARCH)
	return tc.step(t, "downloading", "from "+url, func() (Resolved, error) {
		slot := filepath.Dir(tc.BinaryPath(t))
		if err := os.MkdirAll(slot, 0o755); err != nil {
			return Resolved{}, err
		}
		tmp, err := os.MkdirTemp(slot, ".download-*")
		if err != nil {
			return Resolved{}, err
		}
		defer os.RemoveAll(tmp)
		archive := filepath.Join(tmp, filepath.Base(url))
		if err := fetch(ctx, url, archive); err != nil {
			return Resolved{}, err
		}
		out := filepath.Join(tmp, t.Name)
		switch {
		case member == "":
			err = os.Rename(archive, out)
		case strings.HasSuffix(url, ".zip"):
			err = extractZip(archive, member, out)
		default:
			err = extractTarGz(archive, member, out)
		}
		if err != nil {
			return Resolved{}, fmt.Errorf("extract %s from %s: %w", member, url, err)
		}
		return tc.install(ctx, t, out, SourceDownloaded)
	})
}

// httpClient fails fast when there is no network, and allows a slow download otherwise.
var httpClient = &http.Client{
	Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	},
}

// fetch downloads url into file.
func fetch(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w (offline? this machine may only reach the Go module proxy)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return f.Close()
}

// extractTarGz writes the file named member of a .tar.gz archive to out.
func extractTarGz(archive, member, out string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("no %s in the archive", member)
		}
		if err != nil {
			return err
		}
		if h.Name == member {
			return writeFile(out, tr)
		}
	}
}

// extractZip writes the file named member of a .zip archive to out.
func extractZip(archive, member, out string) error {
	zr, err := zip.OpenReader(archive)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, zf := range zr.File {
		if zf.Name == member {
			r, err := zf.Open()
			if err != nil {
				return err
			}
			defer r.Close()
			return writeFile(out, r)
		}
	}
	return fmt.Errorf("no %s in the archive", member)
}

func writeFile(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
