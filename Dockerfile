# syntax=docker/dockerfile:1
#
# The mail appliance in one image: one Node process, one SQLite file under /data.
#
#   docker build -t mail-appliance .
#   docker run -d --name mail -v mail-data:/data \
#     -p 25:25 -p 465:465 -p 587:587 -p 143:143 -p 993:993 -p 110:110 -p 995:995 -p 3000:3000 \
#     -e MAIL_HOSTNAME=mail.example.com mail-appliance
#   docker logs mail        # the first start prints the default team's API key once
#
# Base image: Node.js 26, the Active LTS line since 2026-10-28 (Node 24 moved to Maintenance LTS on
# 2026-10-20; Node 20, which some developer machines still run, reached end-of-life on 2026-04-30).
# Debian trixie slim, the default Debian of the Node 26 images. Both stages use the same image so that
# the sqlite3 addon is compiled against the very Node and glibc it runs on.

# ---- build: compile TypeScript and the native sqlite3 addon, then drop dev dependencies ----
FROM node:26-trixie-slim AS build
# Toolchain for node-gyp: sqlite3 is built from source here (no prebuilt binary is downloaded).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
# Dependencies first, so that a source-only change reuses this layer.
COPY package.json package-lock.json ./
RUN npm_config_build_from_source=sqlite3 npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build \
 && rm -f dist/.tsbuildinfo \
 && npm prune --omit=dev \
 && find node_modules -mindepth 1 -maxdepth 1 -type d -empty -delete \
 && node --input-type=commonjs -e "require('sqlite3')"

# ---- runtime: compiled JavaScript, production node_modules, config, launcher; runs as `node` ----
FROM node:26-trixie-slim
# - Ports below 1024 for the unprivileged `node` user: the image starts through a copy of util-linux's setpriv
#   that carries the file capability cap_net_bind_service (permitted only), and setpriv starts `npm start` with
#   that capability raised as an *ambient* capability (inheritable + ambient sets), which every process it runs
#   (npm, bash, node) keeps across exec. node itself has no file capabilities, so the kernel does not mark its
#   exec as secure (AT_SECURE) and glibc honours MALLOC_* below (and Node honours NODE_OPTIONS and
#   NODE_EXTRA_CA_CERTS); a `setcap` on node, as before, put glibc in secure mode, where MALLOC_* are ignored.
#   `sysctl net.ipv4.ip_unprivileged_port_start=0` would need no capability at all, but it is a setting of the
#   network namespace that the container cannot write as the `node` user (only the runtime sets it: `docker run
#   --sysctl ...`), so the image cannot rely on it. Docker's default capability set includes
#   NET_BIND_SERVICE; a container started with `--cap-drop ALL` must `--cap-add NET_BIND_SERVICE`.
# - MALLOC_ARENA_MAX=2: glibc gives each busy thread its own arena (up to 8 per core) and never returns an arena;
#   two bound the memory a burst of worker and libuv threads leaves behind (see docs/PERFORMANCE.md, Memory).
# - The `node` user (uid 1000) comes with the official image; it is created only if a base lacks it.
# - /data belongs to `node`, so a fresh named volume starts writable. A bind mount keeps the host
#   folder's owner: `chown 1000:1000` it first.
COPY scripts/docker-entrypoint.sh /usr/local/bin/mail-entrypoint
RUN chmod 0755 /usr/local/bin/mail-entrypoint \
 && apt-get update \
 && apt-get install -y --no-install-recommends libcap2-bin \
 && (command -v setpriv >/dev/null || apt-get install -y --no-install-recommends setpriv) \
 && install -m 0755 "$(command -v setpriv)" /usr/local/bin/setpriv-net-bind \
 && setcap cap_net_bind_service=p /usr/local/bin/setpriv-net-bind \
 && apt-get purge -y --auto-remove libcap2-bin \
 && rm -rf /var/lib/apt/lists/* \
 && (id -u node >/dev/null 2>&1 || (groupadd --gid 1000 node && useradd --uid 1000 --gid node --create-home --shell /bin/bash node)) \
 && mkdir -p /data \
 && chown node:node /data
ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_SCRIPT_SHELL=/bin/bash \
    MAIL_DATA_DIR=/data \
    MAIL_API_PORT=3000 \
    MAIL_MX_PORT=25 \
    MAIL_SUBMISSION_PORT=587 \
    MAIL_SUBMISSIONS_PORT=465 \
    MAIL_IMAP_PORT=143 \
    MAIL_IMAPS_PORT=993 \
    MAIL_POP3_PORT=110 \
    MAIL_POP3S_PORT=995 \
    MALLOC_ARENA_MAX=2
WORKDIR /app
# Application files stay owned by root: the process can read them but only writes to /data.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY config/default.json ./config/default.json
COPY scripts/launch.mjs ./scripts/launch.mjs
USER node
VOLUME /data
# SMTP (MX), SMTPS, submission, IMAP, IMAPS, POP3, POP3S, REST API
EXPOSE 25 465 587 143 993 110 995 3000
# `npm start` as PID 1 stops cleanly without --init: npm forwards SIGTERM/SIGINT to the script it runs,
# and with bash as npm's script shell (bash execs a lone command; dash, the default /bin/sh, forks and
# would swallow the signal, leaving the app to be SIGKILLed) that script is the appliance's node process
# itself. The appliance stops accepting, finishes in-flight requests, closes the database and exits 0;
# npm exits with its status. It starts no child processes (no src/ here, so launch.mjs never runs tsc),
# so there are no zombies for an init to reap.
STOPSIGNAL SIGTERM
# GET /health (no credential) on the API port, with node itself (slim images have no curl). node:http,
# not fetch: fetch refuses the mail ports (25, 110, 143, 465, 587, 993, 995) should the API be moved to one.
# It asks loopback unless MAIL_BIND names one specific address.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["node", "--input-type=commonjs", "-e", "const b = (process.env.MAIL_BIND || '').replace(/^\\[|\\]$/g, ''); const host = ['', '0.0.0.0', '::'].includes(b) ? '127.0.0.1' : b; const req = require('node:http').get({ host, port: Number(process.env.MAIL_API_PORT || 3000), path: '/health', timeout: 8000 }, (res) => process.exit(res.statusCode === 200 ? 0 : 1)); req.on('timeout', () => req.destroy(new Error('timeout'))); req.on('error', () => process.exit(1));"]
# The README's start command, with cap_net_bind_service as an ambient capability (see above) through
# scripts/docker-entrypoint.sh, which runs the command without it where the container may not have it
# (--cap-drop ALL, no-new-privileges). Arguments given to `docker run IMAGE …` replace CMD and run the same way.
ENTRYPOINT ["/usr/local/bin/mail-entrypoint"]
CMD ["npm", "start"]
