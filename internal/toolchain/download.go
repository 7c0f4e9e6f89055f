package toolchain

import (
	"archive/tar"
	"archive/zip"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// downloadTool fetches t's upstream release (a plain binary, or one file of a .tar.gz or .zip)
// and its published SHA-256, refuses it when they differ, then verifies and installs it like a
// build. Nothing reaches the cache unless the sum matched and the binary ran as the pinned
// version: the download lives in a temporary directory that is removed on every failure.
func (tc *Toolchain) downloadTool(ctx context.Context, t *Tool) (Resolved, error) {
	raw, member := t.url(runtime.GOOS, runtime.GOARCH)
	rawSums, entry := t.sums(runtime.GOOS, runtime.GOARCH)
	url, sumsURL := tc.mirrored(raw), tc.mirrored(rawSums)
	return tc.step(t, "downloading", "from "+url, func() (Resolved, error) {
		ctx, cancel := context.WithTimeout(ctx, cmp.Or(tc.opts.DownloadTimeout, 10*time.Minute))
		defer cancel()
		slot := filepath.Dir(tc.BinaryPath(t))
		if err := os.MkdirAll(slot, 0o755); err != nil {
			return Resolved{}, err
		}
		tmp, err := os.MkdirTemp(slot, ".download-*")
		if err != nil {
			return Resolved{}, err
		}
		defer os.RemoveAll(tmp)

		want, err := publishedSum(ctx, sumsURL, entry)
		if err != nil {
			return Resolved{}, fmt.Errorf("the published checksum: %w; without it the download cannot be trusted", err)
		}
		archive := filepath.Join(tmp, filepath.Base(url))
		got, err := fetch(ctx, url, archive)
		if err != nil {
			return Resolved{}, err
		}
		if got != want {
			return Resolved{}, fmt.Errorf("checksum mismatch: %s has SHA-256 %s, but %s publishes %s; the download was discarded and nothing was cached (a proxy or mirror serving another file? retry, or set POLYKUBE_OFFLINE=1 to build from source)",
				url, got, sumsURL, want)
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

// mirrored returns url as fetched through the mirror, if one is set: https://HOST/PATH becomes
// MIRROR/HOST/PATH.
func (tc *Toolchain) mirrored(url string) string {
	if tc.opts.Mirror == "" {
		return url
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://")
	return strings.TrimSuffix(tc.opts.Mirror, "/") + "/" + rest
}

// probe checks once per host that the release host of url answers at all (any HTTP status
// counts), within ProbeTimeout, so that an offline machine loses about a DNS lookup, not a
// download timeout, before it builds.
func (tc *Toolchain) probe(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
	if err != nil {
		return err
	}
	host := req.URL.Host
	if err, done := tc.reachable[host]; done {
		return err
	}
	timeout := cmp.Or(tc.opts.ProbeTimeout, 2*time.Second)
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := httpClient.Do(req.WithContext(pctx))
	if err != nil {
		err = fmt.Errorf("%s did not answer within %s (offline?)", host, timeout)
	} else {
		resp.Body.Close()
	}
	tc.reachable[host] = err
	return err
}

// httpClient fails fast when there is no network, and allows a slow download otherwise (each
// download is bounded by Options.DownloadTimeout).
var httpClient = &http.Client{
	Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	},
}

// get returns the body of url, which must answer 200.
func get(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

// fetch downloads url into file and returns the file's SHA-256 (hex).
func fetch(ctx context.Context, url, file string) (string, error) {
	body, err := get(ctx, url)
	if err != nil {
		return "", err
	}
	defer body.Close()
	f, err := os.Create(file)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), body); err != nil {
		f.Close()
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	return hex.EncodeToString(h.Sum(nil)), f.Close()
}

// publishedSum reads the SHA-256 upstream publishes: the first field of a bare sum file
// (entry ""), or the sum of entry in a "<hex>  <file>" list (sha256sum's format, "*" marking
// binary mode allowed).
func publishedSum(ctx context.Context, url, entry string) (string, error) {
	body, err := get(ctx, url)
	if err != nil {
		return "", err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if entry == "" || (len(fields) == 2 && strings.TrimPrefix(fields[1], "*") == entry) {
			sum := strings.ToLower(fields[0])
			if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
				return "", fmt.Errorf("%s: %q is not a SHA-256", url, fields[0])
			}
			return sum, nil
		}
	}
	if entry == "" {
		return "", fmt.Errorf("%s is empty", url)
	}
	return "", fmt.Errorf("%s lists no %s", url, entry)
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
