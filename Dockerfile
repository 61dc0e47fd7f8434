# syntax=docker/dockerfile:1
#
# buzz-lite in a container (RL-32): a cgo-free static binary on distroless,
# running as a non-root user, its data directory in the /data volume.
#
#   docker build -t buzz-lite .                          # version from the build info (git revision)
#   docker build --build-arg VERSION=v1.2.3 -t buzz-lite .
#   docker run -d --name buzz-lite -p 127.0.0.1:7777:7777 -v buzz-lite-data:/data \
#     -e BUZZ_LITE_RELAY_URL=wss://chat.example.org --stop-timeout 30 buzz-lite
#
# BUZZ_LITE_RELAY_URL is required: the relay listens on 0.0.0.0 in here and
# refuses to start on a non-loopback address without the URL that NIP-42
# AUTH events and NIP-98 tokens must name (RL-28). docs/deploy.md says more.
#
# scripts/check-dockerfile (run by .ci/run) runs this build stage's `go build`
# line against the checkout, so keep it one RUN that ends the build stage.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY . .
# Stamps the version with -ldflags -X when given; otherwise the binary
# reports the module version or the git revision from its build info, which
# is why .dockerignore keeps .git in the context.
ARG VERSION=""
ENV CGO_ENABLED=0
# The data directory is made here because the final stage has no shell:
# a named volume mounted on /data starts with this owner.
RUN mkdir -p /out/data
RUN --mount=type=cache,target=/root/.cache/go-build --mount=type=cache,target=/go/pkg/mod \
    go build -trimpath -ldflags="-s -w${VERSION:+ -X main.version=$VERSION}" -o /out/buzz-lite .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/buzz-lite /buzz-lite
COPY --from=build --chown=65532:65532 /out/data /data
USER nonroot:nonroot
ENV BUZZ_LITE_SERVER_LISTEN=0.0.0.0:7777 \
    BUZZ_LITE_STORAGE_DATA_DIR=/data
VOLUME /data
EXPOSE 7777
# No HEALTHCHECK: the image has no shell or HTTP client to run one. Probe
# GET /healthz (liveness) and GET /readyz (readiness) from the orchestrator.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/buzz-lite"]
CMD ["serve"]
