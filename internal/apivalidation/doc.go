// Package apivalidation checks the generated CRDs against a real API server: every manifest of
// testdata/valid is accepted and every one of testdata/invalid is refused with the expected field
// error. The test lives here, in the main module, because the api module imports nothing but
// Kubernetes' API machinery while the test API server comes from the test bed's toolchain.
package apivalidation
