#!/usr/bin/env bash
# Installs the packed OpenClaw plugin (which carries every gstack command) into a prefix:
#   scripts/install-prefix.sh --tarball FILE --prefix DIR [--runtime NODE_DIR]
# With --runtime (a Node.js distribution folder holding bin/node), that runtime is copied to
# DIR/lib/gstack/node and each command in DIR/bin becomes a small script that starts it, so the
# commands and the service unit they write keep working on a machine whose own Node is too old,
# and after the checkout that installed them is gone. Without it, the commands use `node` on PATH.
# npm must be on PATH; nothing is fetched from the registry.
set -euo pipefail

tarball="" prefix="" runtime=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tarball) tarball="$2"; shift 2 ;;
    --prefix) prefix="$2"; shift 2 ;;
    --runtime) runtime="$2"; shift 2 ;;
    *) echo "install-prefix: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -f "$tarball" ] || { echo "install-prefix: no tarball at '$tarball'" >&2; exit 2; }
[ -n "$prefix" ] || { echo "install-prefix: --prefix DIR is required" >&2; exit 2; }
mkdir -p "$prefix/bin"
prefix=$(cd "$prefix" && pwd)
marker="# gstack command started by the Node.js installed with it"

# Scripts from an earlier install with a runtime would make npm refuse to link the bins.
for file in "$prefix"/bin/gstack-*; do
  if [ -f "$file" ] && [ ! -L "$file" ] && grep -qF "$marker" "$file"; then rm -f "$file"; fi
done

npm install --global --prefix "$prefix" --omit=peer --offline --no-audit --no-fund --loglevel=error "$tarball" >/dev/null
package="$prefix/lib/node_modules/@gstack/openclaw-plugin"
commands=$(sed -n '/"bin": {/,/}/s/^ *"\(gstack-[a-z-]*\)":.*/\1/p' "$package/package.json")

node_home="$prefix/lib/gstack/node"
if [ -n "$runtime" ]; then
  [ -x "$runtime/bin/node" ] || { echo "install-prefix: no bin/node in $runtime" >&2; exit 2; }
  rm -rf "$node_home.new"
  mkdir -p "$(dirname "$node_home")"
  cp -R "$runtime" "$node_home.new"
  rm -rf "$node_home"
  mv "$node_home.new" "$node_home"
  for command in $commands; do
    script="$package/dist/bin/$command.js"
    rm -f "$prefix/bin/$command"
    printf '#!/bin/sh\n%s\nexec "%s" "%s" "$@"\n' "$marker" "$node_home/bin/node" "$script" >"$prefix/bin/$command.new"
    chmod 755 "$prefix/bin/$command.new"
    mv "$prefix/bin/$command.new" "$prefix/bin/$command"
  done
else
  rm -rf "$node_home"
fi
echo "$commands"
