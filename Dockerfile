# The unbounded-mtu image: the agent, stripped, on a distroless glibc base (docs/operations.md,
# "Build the image"). The DaemonSet in deploy/ runs it as `unbounded-mtu:0.1.0`:
#
#   docker build -t unbounded-mtu:0.1.0 \
#     --build-arg UNBOUNDED_MTU_COMMIT="$(git rev-parse --short=12 HEAD)" \
#     --build-arg UNBOUNDED_MTU_BUILD_DATE="$(date -u +%F)" .
#
# The build stage uses the toolchain CI tests with (.ci/run checks RUST_VERSION against it and
# runs the same deploy/build-binary.sh).

ARG RUST_VERSION=1.95.0

FROM docker.io/library/rust:${RUST_VERSION}-slim-bookworm AS build
WORKDIR /src
COPY . .
# No git checkout inside the build: `--version` takes its commit and date from these
# (agent/build.rs).
ARG UNBOUNDED_MTU_COMMIT=unknown
ARG UNBOUNDED_MTU_BUILD_DATE=unknown
ENV UNBOUNDED_MTU_COMMIT=${UNBOUNDED_MTU_COMMIT} \
    UNBOUNDED_MTU_BUILD_DATE=${UNBOUNDED_MTU_BUILD_DATE}
RUN sh deploy/build-binary.sh /out/unbounded-mtu

# glibc and libgcc_s, nothing else: no shell, no package manager. Root (uid 0) on purpose: the
# DaemonSet drops every capability but NET_ADMIN, which a non-root process would not keep.
FROM gcr.io/distroless/cc-debian12
COPY --from=build /out/unbounded-mtu /usr/local/bin/unbounded-mtu
ENTRYPOINT ["/usr/local/bin/unbounded-mtu"]
CMD ["agent"]
