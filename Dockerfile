# The netqos node image: netqosd (the entrypoint) and netqosctl on Debian bookworm-slim, plus
# bpftool, tc and ip for operators (`kubectl exec`). Nothing is fetched at runtime.
#
#   docker build -t registry.example.com/netqos/netqosd:0.1.0 .
#
# deploy/README.md covers pushing it and deploying the DaemonSet.
ARG DEBIAN_RELEASE=bookworm

# ---- build: toolchain and -dev packages, compiled as an unprivileged user --------------------
FROM debian:${DEBIAN_RELEASE} AS build
ARG DEBIAN_FRONTEND=noninteractive
# The same package list as a developer machine (one list, scripts/install-deps.sh); copied alone
# first so the layer is reused until the list changes.
COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN /tmp/install-deps.sh && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin builder
COPY --chown=builder:builder . /src
USER builder
WORKDIR /src
RUN cmake -S /src -B /src/build-image -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DNETQOS_BUILD_TESTS=OFF \
 && ninja -C /src/build-image netqosd netqosctl

# ---- runtime: only the shared libraries the binaries link, and the operator tools ------------
FROM debian:${DEBIAN_RELEASE}-slim
ARG DEBIAN_FRONTEND=noninteractive
# The one package list; tests/deploy/check_runtime_libs.sh checks it against `ldd` of the
# binaries, so the image cannot miss a library.
COPY deploy/image/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -q \
 && sed -e 's/#.*//' /tmp/runtime-packages.txt \
      | xargs -r apt-get install -y -q --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
COPY --from=build /src/build-image/bin/netqosd /src/build-image/bin/netqosctl /usr/local/bin/
LABEL org.opencontainers.image.title="netqos" \
      org.opencontainers.image.description="netqos node daemon: QRM network plugin, eBPF + HTB"
# Runs as root on purpose: loading BPF programs, changing qdiscs and serving the kubelet's plugin
# directory need root in the host's user namespace (the DaemonSet grants it; see deploy/README.md).
ENTRYPOINT ["/usr/local/bin/netqosd"]
