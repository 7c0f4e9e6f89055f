# The Polykube image of the datapath tier: the operator (/polykube-operator, the entrypoint)
# and the routing probe's echo server and client (/polykube-echo), static binaries on an
# empty base running as a non-root user. `polykube-testbed up --provider kind|k0s` builds it
# as polykube.local/polykube:e2e and loads it into every node; nothing pulls it.
#
# The Go image is pinned by version, matching the Go of go.mod's toolchain; the final stage
# is `scratch`, which has no digest to pin.
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
# The API is its own module, which go.mod replaces with ./api.
COPY api/go.mod api/go.sum api/
RUN go mod download
COPY api/ api/
COPY operator/ operator/
COPY placement/ placement/
COPY internal/meshview/ internal/meshview/
COPY internal/version/ internal/version/
COPY testbed/datapath/echo/ testbed/datapath/echo/
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
RUN go build -ldflags="-s -w" -o /out/polykube-operator ./operator \
 && go build -ldflags="-s -w" -o /out/polykube-echo ./testbed/datapath/echo

FROM scratch
COPY --from=build /out/polykube-operator /out/polykube-echo /
USER 65532:65532
ENTRYPOINT ["/polykube-operator"]
