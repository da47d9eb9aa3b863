# syntax=docker/dockerfile:1
# agent-test-gateway: build with dev dependencies, run with production ones only.
#   docker build --platform linux/amd64 -t agent-test-gateway:0.2.0 .
# The image serves by default and runs the CLI when given its arguments:
#   docker run IMAGE                                   the gateway (same as `serve`)
#   docker run -v "$PWD/tests:/suites" IMAGE run '/suites/*.yaml' --gateway URL --junit /suites/junit.xml
ARG NODE_IMAGE=node:24-slim

# --- build: TypeScript -> dist/ ------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no dependency needs an install script, and none gets to run one.
# No dependency is bound to an OS or CPU (test/node-version.test.ts), so this builds for any
# platform node:24-slim has; --platform above picks the cluster's.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json openapi.yaml ./
COPY scripts/build.mjs ./scripts/
COPY src ./src
RUN npm run build

# --- runtime -------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# tini as PID 1: it forwards SIGTERM to node (which then drains: readiness false, running
# turns get SHUTDOWN_GRACE_MS, sockets close, exit 0) and reaps zombies. The kernel applies
# no default signal action to PID 1, so node as PID 1 would ignore a SIGTERM that arrives
# before the app installs its handler, and linger until the kubelet's SIGKILL.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
# Shown as the revision label of agent_test_gateway_build_info:
#   docker build --build-arg GIT_REVISION=$(git rev-parse HEAD) …
ARG GIT_REVISION=unknown
ENV GIT_REVISION=${GIT_REVISION}
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
# Read at start-up from the package root (and served as /openapi.json).
COPY openapi.yaml ./
# The debug page's HTML, script and stylesheet, read from the package root when DEBUG_PAGE=true.
COPY public ./public
# The files above stay root-owned: the process can read its code but not change it.
# `node` is uid 1000 in the official images; the Helm chart runs it read-only as 1000 too.
USER node
# Node's module compile cache (V8 code cache of every module), filled here so that a start
# skips most compiling. Node uses it only where it can write, so it lives in /tmp: with the
# chart's read-only root, /tmp is an emptyDir that the pod's first start fills and its
# restarts reuse. The warm-up loads what serving loads at start and what it loads later.
ENV NODE_COMPILE_CACHE=/tmp/node-compile-cache
RUN node dist/entrypoint.js --help > /dev/null \
 && node --input-type=module -e "for (const m of ['./dist/service.js', './dist/peers/peers.js', './dist/mcp/endpoint.js', './dist/suites/request.js', './dist/suites/runner.js', 'undici', 'yaml']) await import(m)"
EXPOSE 8080
# For plain `docker run` only: Kubernetes ignores HEALTHCHECK and uses the chart's probes.
# Slim images have no curl, so node itself asks /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# dist/entrypoint.js: no arguments or `serve` runs the gateway, anything else is the CLI
# (`run`, `chat`, `--help`). An absolute path, so that a CI step may run it from its checkout
# (docker run -w "$PWD", docs/ci.md). test/package.test.ts runs this command line on the packed package.
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/entrypoint.js"]
CMD ["serve"]
