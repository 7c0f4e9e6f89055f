// Command polykube-release builds a Polykube release into a directory, offline and without
// Docker (make release VERSION=vX.Y.Z [DIST=dir]), and pushes a built one to its registry
// (polykube-release publish; make publish), and builds the operator of the previous release
// named in release/PREVIOUS from a git worktree (polykube-release previous-operator; make
// previous-operator), and runs this tree's upgrade-contract tests against that release's code
// (polykube-release previous-contract; make upgrade-contract). See internal/release.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/polykube/polykube/internal/release"
	"github.com/polykube/polykube/internal/toolchain"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "polykube-release:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) > 1 && os.Args[1] == "publish" {
		return publish(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == "previous-operator" {
		return previousOperator(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == "previous-contract" {
		if len(os.Args) > 2 {
			return fmt.Errorf("unexpected arguments %q: previous-contract takes none", os.Args[2:])
		}
		root, err := os.Getwd()
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		_, err = release.CheckPreviousContract(ctx, root, "", os.Stdout)
		return err
	}
	o := release.Options{Out: os.Stdout}
	var imagePlatforms, cliPlatforms string
	flag.StringVar(&o.Version, "version", "", "the release's semver tag, for example v0.1.0 (required)")
	flag.StringVar(&o.Dist, "dist", release.DefaultDist, "output directory: absent, empty, or an earlier release's")
	flag.StringVar(&o.Repository, "repository", release.DefaultRepository, "registry and repository the image is published to; install.yaml names it with the digest")
	flag.StringVar(&o.SignKey, "sign-key", "", "a cosign private key (cosign generate-key-pair; its password in COSIGN_PASSWORD): sign the image and the Flux artifact")
	flag.StringVar(&imagePlatforms, "image-platforms", join(release.ImagePlatforms), "comma-separated os/arch of the operator image")
	flag.StringVar(&cliPlatforms, "cli-platforms", join(release.CLIPlatforms), "comma-separated os/arch of the polykube-status binaries")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: polykube-release takes flags only (see -help)", flag.Args())
	}
	var err error
	if o.ImagePlatforms, err = parsePlatforms(imagePlatforms); err != nil {
		return fmt.Errorf("-image-platforms: %w", err)
	}
	if o.CLIPlatforms, err = parsePlatforms(cliPlatforms); err != nil {
		return fmt.Errorf("-cli-platforms: %w", err)
	}
	if o.RepoRoot, err = os.Getwd(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = release.Build(ctx, o)
	return err
}

// publish pushes a built release: polykube-release publish -dist dist [-registry host:port] [-insecure].
func publish(args []string) error {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	o := release.PublishOptions{Out: os.Stdout}
	fs.StringVar(&o.Dist, "dist", release.DefaultDist, "the release to push, as make release wrote it")
	fs.StringVar(&o.Registry, "registry", "", "registry host[:port] the release was built for (checked, not changed)")
	fs.BoolVar(&o.Insecure, "insecure", false, "push over plain HTTP (a registry on loopback or in a test bed)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: publish takes flags only", fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return release.Publish(ctx, o)
}

// previousOperator builds the previous release's operator binary: polykube-release
// previous-operator -o bin/polykube-operator-previous [-platform os/arch].
func previousOperator(args []string) error {
	fs := flag.NewFlagSet("previous-operator", flag.ContinueOnError)
	o := release.PreviousOperatorOptions{Out: os.Stdout}
	var platform string
	fs.StringVar(&o.Output, "o", "bin/polykube-operator-previous", "path of the operator binary to write")
	fs.StringVar(&platform, "platform", "", "os/arch to build for; empty: this machine's")
	cached := fs.Bool("cached", false, "instead of -o, build into the cache (${POLYKUBE_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/polykube}/previous-operator/<commit>-<os>-<arch>) unless it is there, and print the binary's path as the last line")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: previous-operator takes flags only", fs.Args())
	}
	if platform != "" {
		p, err := release.ParsePlatform(platform)
		if err != nil {
			return fmt.Errorf("-platform: %w", err)
		}
		o.Platform = &p
	}
	var err error
	if o.RepoRoot, err = os.Getwd(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *cached {
		cache, err := toolchain.DefaultCacheDir()
		if err != nil {
			return err
		}
		o.Out = os.Stderr // stdout is the path alone
		bin, _, err := release.CachedPreviousOperator(ctx, o, cache)
		if err != nil {
			return err
		}
		fmt.Println(bin)
		return nil
	}
	_, err = release.BuildPreviousOperator(ctx, o)
	return err
}

func join(ps []release.Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func parsePlatforms(s string) ([]release.Platform, error) {
	var out []release.Platform
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := release.ParsePlatform(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no platform given")
	}
	return out, nil
}
