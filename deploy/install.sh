#!/bin/sh
# Install the tiermem agent on this host: the binary, a config that only observes (kept if
# one exists), the systemd unit, the docs with every page they link to, the monitoring files,
# and the example configs to copy from.
#
#   cargo build --release --locked -p tiermem-cli
#   sudo deploy/install.sh [target/release/tiermem]
#   sudoedit /etc/tiermem/agent.toml          # observe-only as installed; add sections from
#                                             # /usr/share/doc/tiermem/examples/example.toml
#   sudo tiermem agent --config /etc/tiermem/agent.toml --dry-run   # every problem at once
#   sudo systemctl daemon-reload && sudo systemctl enable --now tiermem-agent
#
# The installed /etc/tiermem/agent.toml is configs/agent/observe.toml: the agent serves its
# metrics and changes no kernel setting until you add sections to it. DESTDIR=DIR stages
# everything under DIR instead (packaging, tests). Run from the repository's top directory.
set -eu
BIN=${1:-target/release/tiermem}
D=${DESTDIR:-}
DOC=$D/usr/share/doc/tiermem
[ -x "$BIN" ] || { echo "install.sh: no tiermem binary at $BIN (cargo build --release -p tiermem-cli)" >&2; exit 2; }
[ -f deploy/tiermem-agent.service ] || { echo "install.sh: run from the repository's top directory" >&2; exit 2; }
install -D -m 755 "$BIN" "$D/usr/local/bin/tiermem"
if [ -e "$D/etc/tiermem/agent.toml" ]; then
  echo "keeping the existing $D/etc/tiermem/agent.toml"
else
  install -D -m 600 configs/agent/observe.toml "$D/etc/tiermem/agent.toml"
fi
install -D -m 644 deploy/tiermem-agent.service "$D/etc/systemd/system/tiermem-agent.service"
for f in configs/agent/*.toml; do
  install -D -m 644 "$f" "$DOC/examples/$(basename "$f")"
done
for f in deploy/prometheus.yml deploy/grafana-dashboard.json; do
  install -D -m 644 "$f" "$DOC/$(basename "$f")"
done

# The docs: agent.md (the unit's Documentation=) and security.md, every file they link to
# relatively (config.md, traces.md, ..., figures), and so on, so that every link of the
# installed pages resolves under $DOC. Links to other sites (scheme:) and anchors of the
# same page are not files; a link out of docs/ or to a missing file is an error.
set -f
todo="agent.md security.md"
seen=" "
while :; do
  set -- $todo
  [ $# -gt 0 ] || break
  f=$1
  shift
  todo="$*"
  case "$seen" in *" $f "*) continue ;; esac
  seen="$seen$f "
  [ -f "docs/$f" ] || { echo "install.sh: docs/$f (linked from an installed page) does not exist" >&2; exit 1; }
  install -D -m 644 "docs/$f" "$DOC/$f"
  case "$f" in *.md) ;; *) continue ;; esac
  dir=$(dirname "$f")
  for link in $(grep -o '][(][^)#[:space:]]*' "docs/$f" | sed 's/^][(]//'); do
    case "$link" in "" | *:* | /*) continue ;; esac
    target=$(realpath -m --relative-to=docs "docs/$dir/$link")
    case "$target" in ..*) echo "install.sh: docs/$f links to $link, outside docs/" >&2; exit 1 ;; esac
    todo="$todo $target"
  done
done
set +f
echo "installed; /etc/tiermem/agent.toml observes only unless it was kept. Next: add what the agent should manage (examples in /usr/share/doc/tiermem/examples/), check it with tiermem agent --config /etc/tiermem/agent.toml --dry-run, then systemctl daemon-reload && systemctl enable --now tiermem-agent"
