# The tiermem agent's image, for deploy/kubernetes/tiermem-agent.yaml. From the repository's
# top directory:
#
#   docker build -t tiermem:0.1.0 .
#
# The tag is the workspace version (Cargo.toml, [workspace.package] version), as the
# DaemonSet names it and the label below says. The image holds the binary at
# /usr/local/bin/tiermem and the observe-only config (configs/agent/observe.toml) at
# /etc/tiermem/agent.toml; the DaemonSet mounts its ConfigMap over /etc/tiermem.

# Build: Debian bookworm's toolchain image, so the binary links against bookworm's glibc,
# the runtime stage's.
ARG RUST_VERSION=1.95
FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p tiermem-cli

# Runtime: the binary and the config, nothing else.
FROM debian:bookworm-slim
LABEL org.opencontainers.image.title="tiermem" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.description="tiermem agent: tiered-memory settings and user-space tiering controllers"
COPY --from=build /src/target/release/tiermem /usr/local/bin/tiermem
COPY configs/agent/observe.toml /etc/tiermem/agent.toml
ENTRYPOINT ["/usr/local/bin/tiermem"]
CMD ["agent", "--config", "/etc/tiermem/agent.toml", "--log", "info"]
