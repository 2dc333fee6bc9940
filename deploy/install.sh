#!/bin/sh
# Install the tiermem agent on this host: the binary, a config (kept if one exists), the
# systemd unit, and the docs and monitoring files the unit and docs point to.
#
#   cargo build --release -p tiermem-cli
#   sudo deploy/install.sh [target/release/tiermem]
#   sudoedit /etc/tiermem/agent.toml          # choose what the agent manages
#   sudo tiermem agent --config /etc/tiermem/agent.toml --dry-run   # every problem at once
#   sudo systemctl daemon-reload && sudo systemctl enable --now tiermem-agent
#
# DESTDIR=DIR stages everything under DIR instead (packaging, tests). Run from the
# repository's top directory.
set -eu
BIN=${1:-target/release/tiermem}
D=${DESTDIR:-}
[ -x "$BIN" ] || { echo "install.sh: no tiermem binary at $BIN (cargo build --release -p tiermem-cli)" >&2; exit 2; }
[ -f deploy/tiermem-agent.service ] || { echo "install.sh: run from the repository's top directory" >&2; exit 2; }
install -D -m 755 "$BIN" "$D/usr/local/bin/tiermem"
if [ -e "$D/etc/tiermem/agent.toml" ]; then
  echo "keeping the existing $D/etc/tiermem/agent.toml"
else
  install -D -m 600 configs/agent/example.toml "$D/etc/tiermem/agent.toml"
fi
install -D -m 644 deploy/tiermem-agent.service "$D/etc/systemd/system/tiermem-agent.service"
for f in docs/agent.md docs/security.md deploy/prometheus.yml deploy/grafana-dashboard.json; do
  install -D -m 644 "$f" "$D/usr/share/doc/tiermem/$(basename "$f")"
done
echo "installed; next: edit /etc/tiermem/agent.toml, check it with tiermem agent --config /etc/tiermem/agent.toml --dry-run, then systemctl daemon-reload && systemctl enable --now tiermem-agent"
