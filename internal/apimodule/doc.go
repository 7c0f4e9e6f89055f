// Package apimodule holds the test that keeps github.com/polykube/polykube/api a module anyone can
// import: it requires Kubernetes' API machinery and nothing else.
package apimodule
