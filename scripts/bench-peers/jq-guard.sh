#!/usr/bin/env bash
# The bash + jq peer of scripts/bench-guard.sh: a PreToolUse hook doing the guard's host check on
# a navigation the way a hand-written hook would: the URL's host (after any `user@`), lowercased,
# must be an allowlist entry or a subdomain of one (the allowlist of flows/checkout.md). Allowed:
# exit 0, silent; outside: exit 2 with the reason on stderr, as Claude Code reads a hook's answer.
# One `jq` process; no URL parser (so `\`, percent-encoding and IDN tricks go unjudged: the
# guard's own parser is what this peer does not pay for).
host="$(jq -r '.tool_input.url // ""
    | (capture("^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?(?<h>[^/?#:]*)").h // "")
    | ascii_downcase')"
case "$host" in
staging.example.com | *.staging.example.com | accounts.example.com | *.accounts.example.com) exit 0 ;;
esac
echo "blocked: host \"$host\" is outside the allowlist" >&2
exit 2
