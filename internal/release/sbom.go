package release

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
)

// writeSBOM describes the image as SPDX 2.3 JSON: the image (by its index digest) contains the
// operator binary, which depends on every Go module linked into it, as the binary's own build
// information records them (what `go version -m` prints). The image holds nothing else.
func (b *build) writeSBOM(binary string) error {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("read the build information of %s: %w", binary, err)
	}
	const imageID, binaryID = "Package-operator-image", "Package-polykube-operator"
	created := b.epoch.Format("2006-01-02T15:04:05Z")
	image := &spdx.Package{
		PackageName:             b.Repository,
		PackageSPDXIdentifier:   imageID,
		PackageVersion:          b.res.IndexDigest,
		PackageDownloadLocation: noAssertion,
		PrimaryPackagePurpose:   "CONTAINER",
		PackageLicenseDeclared:  "Apache-2.0",
		PackageCopyrightText:    noAssertion,
		PackageExternalReferences: []*spdx.PackageExternalReference{{
			Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL,
			Locator: imagePURL(b.Repository, b.res.IndexDigest, b.Version),
		}},
	}
	bin := &spdx.Package{
		PackageName:             "polykube-operator",
		PackageSPDXIdentifier:   binaryID,
		PackageVersion:          b.Version,
		PackageDownloadLocation: "git+https://github.com/polykube/polykube@" + orNoAssertion(b.commit),
		PrimaryPackagePurpose:   "APPLICATION",
		PackageLicenseDeclared:  "Apache-2.0",
		PackageCopyrightText:    noAssertion,
		PackageComment:          "Built with " + info.GoVersion + " for " + setting(info, "GOOS") + "/" + setting(info, "GOARCH") + ", CGO_ENABLED=" + setting(info, "CGO_ENABLED"),
		PackageExternalReferences: []*spdx.PackageExternalReference{{
			Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL,
			Locator: goPURL(info.Main.Path, b.Version),
		}},
	}
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      "polykube-operator-image-" + b.Version,
		DocumentNamespace: "https://github.com/polykube/polykube/releases/" + b.Version + "/" + SBOMFile + "#" + b.res.IndexDigest,
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: "polykube-release-" + b.Version}},
			Created:  created,
		},
		Packages: []*spdx.Package{image, bin},
		Relationships: []*spdx.Relationship{
			rel("DOCUMENT", imageID, common.TypeRelationshipDescribe),
			rel(imageID, binaryID, "CONTAINS"),
		},
	}
	modules := append([]*goModule{{Path: "stdlib", Version: info.GoVersion}}, depsOf(info)...)
	for i, m := range modules {
		id := common.ElementID(fmt.Sprintf("Package-go-module-%d", i))
		doc.Packages = append(doc.Packages, &spdx.Package{
			PackageName:             m.Path,
			PackageSPDXIdentifier:   id,
			PackageVersion:          m.Version,
			PackageDownloadLocation: noAssertion,
			PackageLicenseConcluded: noAssertion,
			PackageLicenseDeclared:  noAssertion,
			PackageCopyrightText:    noAssertion,
			PackageComment:          m.Comment,
			PackageExternalReferences: []*spdx.PackageExternalReference{{
				Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL,
				Locator: goPURL(m.Path, m.Version),
			}},
		})
		doc.Relationships = append(doc.Relationships, rel(binaryID, string(id), common.TypeRelationshipDependsOn))
	}
	var buf bytes.Buffer
	if err := spdxjson.Write(doc, &buf, spdxjson.Indent("  "), spdxjson.EscapeHTML(false)); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.Dist, SBOMFile), buf.Bytes(), 0o644)
}

type goModule struct{ Path, Version, Comment string }

// depsOf lists the modules linked into the binary, replacements resolved: the SBOM names the
// code that was compiled, and says what it replaced.
func depsOf(info *buildinfo.BuildInfo) []*goModule {
	var out []*goModule
	for _, d := range info.Deps {
		m := &goModule{Path: d.Path, Version: d.Version}
		if r := d.Replace; r != nil {
			m = &goModule{Path: r.Path, Version: r.Version, Comment: "replaces " + d.Path + "@" + d.Version}
		}
		out = append(out, m)
	}
	return out
}

func setting(info *buildinfo.BuildInfo, key string) string {
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

func rel(a, b, kind string) *spdx.Relationship {
	return &spdx.Relationship{RefA: common.MakeDocElementID("", a), RefB: common.MakeDocElementID("", b), Relationship: kind}
}

func orNoAssertion(s string) string {
	if s == "" {
		return noAssertion
	}
	return s
}

// goPURL is a package URL of type golang: the path lower-cased (purl types are), the
// version as a qualifier-free @version.
func goPURL(path, version string) string {
	p := "pkg:golang/" + strings.ToLower(path)
	if version != "" && version != "(devel)" {
		p += "@" + version
	}
	return p
}

var nonName = regexp.MustCompile(`[^a-z0-9._-]`)

// imagePURL is a package URL of type oci: the last path element as the name, the digest as the
// version, the repository and tag as qualifiers.
func imagePURL(repo, digest, tag string) string {
	name := nonName.ReplaceAllString(strings.ToLower(repo[strings.LastIndex(repo, "/")+1:]), "-")
	return "pkg:oci/" + name + "@" + strings.Replace(digest, ":", "%3A", 1) +
		"?repository_url=" + strings.ToLower(repo) + "&tag=" + tag
}

// noAssertion is SPDX's "this document makes no claim about the field".
const noAssertion = "NOASSERTION"
