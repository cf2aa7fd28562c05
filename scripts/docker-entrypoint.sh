#!/bin/sh
# The image's entrypoint (Dockerfile): runs its command (CMD, `npm start`) with cap_net_bind_service as an
# ambient capability, raised by a copy of setpriv that holds it as a file capability, so that the unprivileged
# `node` user binds the mail ports below 1024 while node itself carries no file capability (which would put
# glibc in secure mode and make it ignore MALLOC_ARENA_MAX; see the Dockerfile).
# Where the capability cannot be had (`--cap-drop ALL` without `--cap-add NET_BIND_SERVICE`, or
# `--security-opt no-new-privileges`, under which file capabilities are not granted) the command runs as it is:
# ports of 1024 and above still work, and a port below 1024 fails at its bind with a message naming it.
BIND=/usr/local/bin/setpriv-net-bind
RAISE="--inh-caps=+net_bind_service --ambient-caps=+net_bind_service"
# shellcheck disable=SC2086
if "$BIND" $RAISE -- true 2>/dev/null; then exec "$BIND" $RAISE -- "$@"; fi
echo "entrypoint: cap_net_bind_service is not available (--cap-drop ALL or no-new-privileges?): ports below 1024 cannot be bound; set every MAIL_*_PORT to 1024 or above, or add the capability" >&2
exec "$@"
