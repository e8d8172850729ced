#!/usr/bin/env bash
# The steps of the GitHub Action (action.yml at the repository root) and of the Kubernetes Job
# (deploy/k8s/indexed-job.yaml), kept here so that the tests run exactly what a CI job runs
# (tests/tests/e2e/action.rs). docs/guide.md#ci, docs/kubernetes.md.
#
#   scripts/action.sh userns    lift AppArmor's restriction on unprivileged user namespaces
#   scripts/action.sh install   leopold (from this checkout), bubblewrap, Chromium, the pinned CLIs
#   scripts/action.sh run       the suite (`leopold persona run …`), or the merge of shards' runs
#                               (`leopold persona report --merge …`), from the INPUT_* variables
#
# Inputs come as INPUT_<NAME> variables, as action.yml passes them (never spliced into a shell
# line, so a flow name cannot run a command). What the steps hand on goes to GitHub's files when
# they are set: $GITHUB_OUTPUT, $GITHUB_PATH, $GITHUB_ENV, $GITHUB_STEP_SUMMARY. Messages go to
# stderr; bad input is one line and exit 2, as leopold's own.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"

say() { echo "action.sh $step: $*" >&2; }
usage_error() { say "$*"; exit 2; }

# `KEY=VALUE` lines appended to the GitHub file named by variable $1, when it is set.
gh_file() {
    local var="$1" file
    shift
    file="${!var:-}"
    [[ -n "$file" ]] || return 0
    printf '%s\n' "$@" >>"$file"
}

# Puts $1 first on PATH, here and (through $GITHUB_PATH) for the job's later steps.
add_path() {
    export PATH="$1:$PATH"
    gh_file GITHUB_PATH "$1"
}

# --- userns -------------------------------------------------------------------------------------

# Ubuntu 24.04 (GitHub's ubuntu-24.04 and ubuntu-latest runners) ships with AppArmor restricting
# unprivileged user namespaces, so bubblewrap cannot build the worker's box ("setting up uid map:
# Permission denied"). Writing 0 to the sysctl's file is what `sysctl -w
# kernel.apparmor_restrict_unprivileged_userns=0` does; LEOPOLD_USERNS_SYSCTL names another file
# (the tests' stand-in).
userns() {
    local file="${LEOPOLD_USERNS_SYSCTL:-/proc/sys/kernel/apparmor_restrict_unprivileged_userns}"
    local was
    if [[ ! -e "$file" ]]; then
        say "$file absent: AppArmor does not restrict user namespaces here; nothing changed"
        return
    fi
    was="$(<"$file")"
    if [[ "$was" != 1 ]]; then
        say "$file is $was: unprivileged user namespaces are allowed; nothing changed"
        return
    fi
    if [[ -w "$file" ]]; then
        echo 0 >"$file"
    else
        echo 0 | sudo -n tee "$file" >/dev/null ||
            { say "$file is 1 and sudo cannot set it to 0: the box (bubblewrap) will not start; run on a runner with passwordless sudo"; exit 1; }
    fi
    [[ "$(<"$file")" == 0 ]] || { say "wrote 0 to $file but it still says $(<"$file")"; exit 1; }
    say "$file was 1 (AppArmor restricted unprivileged user namespaces, which the box needs); set it to 0"
}

# --- install ------------------------------------------------------------------------------------

# The version in this checkout's Cargo.toml ([workspace.package]).
checkout_version() {
    awk '/^\[/ { section = $0 } section == "[workspace.package]" && $1 == "version" { gsub(/"/, "", $3); print $3; exit }' \
        "$root/Cargo.toml"
}

# The version `leopold --version` reports ("" when there is no leopold on PATH).
installed_version() {
    leopold --version 2>/dev/null | awk '{ print $2 }' || true
}

install() {
    local want have bin pw
    want="$(checkout_version)"
    [[ -n "$want" ]] || { say "no version in $root/Cargo.toml"; exit 1; }
    have="$(installed_version)"
    if [[ "$have" == "$want" ]]; then
        say "leopold $want is already installed ($(command -v leopold)); not rebuilding it"
    else
        command -v cargo >/dev/null || { say "cargo not found: install Rust (rustup) first"; exit 1; }
        say "installing leopold $want from $root/supervisor (cargo install --locked; a few minutes)"
        # From the checkout's root, so that its .cargo/config.toml links the binary statically.
        (cd "$root" && cargo install --locked --path supervisor) >&2
        add_path "${CARGO_HOME:-$HOME/.cargo}/bin"
        have="$(installed_version)"
        [[ "$have" == "$want" ]] || { say "cargo install finished but leopold --version says '${have}', want $want"; exit 1; }
    fi
    "$here/install-box.sh" >/dev/null
    # Assigned first: a failed install stops the step (a substitution inside an argument would not).
    pw="$("$here/install-browser.sh")"
    gh_file GITHUB_ENV "LEOPOLD_PLAYWRIGHT_MCP=$pw"
    bin="$("$here/install-clis.sh")"
    add_path "$bin"
    say "ready: leopold $want, $(command -v bwrap), Chromium, Playwright MCP, claude and codex in $bin"
}

# --- run ----------------------------------------------------------------------------------------

# Splits $2 into the array named $1: words separated by blanks or newlines, quoted as a shell
# would ('a b' or "a b" for one word with a blank), never expanded or run (xargs's own parsing).
split_words() {
    local -n into="$1"
    local tmp
    tmp="$(mktemp)"
    if ! printf '%s' "$2" | xargs -r printf '%s\0' >"$tmp" 2>/dev/null; then
        rm -f "$tmp"
        usage_error "input $3 has an unmatched quote: $2"
    fi
    # shellcheck disable=SC2034 # `into` names the caller's array
    mapfile -d '' -t into <"$tmp"
    rm -f "$tmp"
}

# The `--partition` value for input $1. `count:k8s/N` and `hash:k8s/N` take M from a Kubernetes
# Indexed Job's JOB_COMPLETION_INDEX (0-based, so M = index + 1); N is the Job's completions.
partition_of() {
    local p="$1" kind n idx
    case "$p" in
    count:k8s/* | hash:k8s/*)
        kind="${p%%:*}"
        n="${p#*/}"
        [[ "$n" =~ ^[1-9][0-9]*$ ]] || usage_error "partition $p: N must be a whole number above 0 (the Job's completions)"
        idx="${JOB_COMPLETION_INDEX:-}"
        [[ "$idx" =~ ^[0-9]+$ ]] ||
            usage_error "partition $p takes M from JOB_COMPLETION_INDEX, which is '${idx}': run it in an Indexed Job (completionMode: Indexed)"
        ((idx < n)) || usage_error "JOB_COMPLETION_INDEX $idx is not below $n: set the Job's completions to $n"
        echo "$kind:$((idx + 1))/$n"
        ;;
    *) echo "$p" ;;
    esac
}

# What exit code $1 of `persona run` means (README.md#exit-codes).
meaning() {
    case "$1" in
    0) echo "clean" ;;
    1) echo "a violation" ;;
    2) echo "usage or configuration error" ;;
    3) echo "a worker or its model failed" ;;
    4) echo "another persona run is active in the project" ;;
    5) echo "a persona was stopped (stuck, looping, over a budget or a limit)" ;;
    6) echo "the app did not meet a flow" ;;
    *) echo "exit $1" ;;
    esac
}

# An absolute path for $1, relative to the current directory.
absolute() {
    if [[ "$1" == /* ]]; then echo "$1"; else echo "$PWD/$1"; fi
}

# Hands the outcome on: the step's outputs, a line in the job's summary (after leopold's own
# block), and the exit code unless fail-on-error is false.
hand_on() {
    local code="$1" dir="$2" junit="$3" suite="$4" name="$5" what="$6"
    # A file leopold did not write is no output (a usage error writes none).
    [[ -f "$junit" ]] || junit=""
    [[ -f "$suite" ]] || suite=""
    gh_file GITHUB_OUTPUT "exit-code=$code" "runs-dir=$dir" "artifact-name=$name" \
        "junit=$junit" "suite-report=$suite"
    gh_file GITHUB_STEP_SUMMARY "" \
        "**Leopold** $what: exit $code, $(meaning "$code"). Folder \`${dir#"$PWD/"}\`, uploaded as \`$name\`." ""
    say "exit $code: $(meaning "$code")"
    if [[ "${INPUT_FAIL_ON_ERROR:-true}" == false ]]; then return 0; fi
    return "$code"
}

# `leopold persona run` of the flows input.
suite() {
    local flows=() extra=() args project partition junit runs flag value code=0
    split_words flows "${INPUT_FLOWS:-}" flows
    split_words extra "${INPUT_ARGS:-}" args
    project="${INPUT_PROJECT:-.}"
    [[ -d "$project" ]] || usage_error "project $project is not a folder: set the project input to the folder holding .leopold/"
    project="$(cd "$project" && pwd)"
    partition="$(partition_of "${INPUT_PARTITION:-}")"
    junit="$(absolute "${INPUT_JUNIT:-$project/.leopold/persona/junit.xml}")"
    args=(persona run "${flows[@]}" --harness "${INPUT_HARNESS:-claude}" --project "$project" --junit "$junit")
    # Given only when set, so that leopold's own defaults apply otherwise.
    for flag in jobs attempts partition evidence browser; do
        value="INPUT_${flag^^}"
        value="${!value:-}"
        if [[ "$flag" == partition ]]; then value="$partition"; fi
        if [[ -n "$value" ]]; then args+=("--$flag" "$value"); fi
    done
    args+=("${extra[@]}")
    runs="$project/.leopold/persona/runs"
    # A JUnit file left by an earlier run must not pass for this one's.
    rm -f "$junit"
    say "leopold ${args[*]}"
    leopold "${args[@]}" || code=$?
    hand_on "$code" "$runs" "$junit" "$runs/suite.html" \
        "${INPUT_ARTIFACT_NAME:-leopold-runs${partition:+-${partition//[:\/]/-}}}" \
        "\`persona run\`${partition:+ (partition $partition)}"
}

# `leopold persona report --merge` of the runs folders the merge input names (glob patterns
# allowed: `shards/*`), into the out input.
merge() {
    local words=() dirs=() w out code=0
    split_words words "${INPUT_MERGE:-}" merge
    for w in "${words[@]}"; do
        if [[ "$w" == *[*?[]* ]]; then
            mapfile -t -O "${#dirs[@]}" dirs < <(compgen -G "$w" | sort)
        else
            dirs+=("$w")
        fi
    done
    ((${#dirs[@]})) || usage_error "merge ${INPUT_MERGE:-}: no folder matches"
    out="$(absolute "${INPUT_OUT:-leopold-report}")"
    say "leopold persona report --merge ${dirs[*]} --out $out"
    leopold persona report --merge "${dirs[@]}" --out "$out" || code=$?
    hand_on "$code" "$out" "$out/junit.xml" "$out/suite.html" "${INPUT_ARTIFACT_NAME:-leopold-report}" \
        "\`persona report --merge\` of ${#dirs[@]} folders"
}

run() {
    if [[ -n "${INPUT_FLOWS:-}" && -n "${INPUT_MERGE:-}" ]]; then
        usage_error "both flows and merge are set: a step runs a suite (flows) or merges shards' runs (merge)"
    elif [[ -n "${INPUT_MERGE:-}" ]]; then
        merge
    elif [[ -n "${INPUT_FLOWS:-}" ]]; then
        suite
    else
        usage_error "no flows: set the flows input to flow files or folders (or merge to runs folders)"
    fi
}

step="${1:-}"
case "$step" in
userns | install | run) "$step" ;;
*)
    step=usage
    usage_error "want one of: userns, install, run (got '${1:-}')"
    ;;
esac
