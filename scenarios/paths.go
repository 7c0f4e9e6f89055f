package scenarios

// featuresDir holds the feature files, relative to this package (go test runs in it).
const featuresDir = "../features"
