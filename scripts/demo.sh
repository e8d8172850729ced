#!/usr/bin/env bash
# The main job end to end: a demo persona run under Claude Code and Codex (issue #6).
set -euo pipefail
echo "demo: not built yet (needs the supervisor and the test kit: issues #5, #6)" >&2
exit 1
