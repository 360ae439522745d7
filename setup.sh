#!/usr/bin/env bash
# Set up tigris-scons on Debian 12 and prove it works: `./setup.sh`.
#
#   1. installs the Debian packages that are missing (only those; --no-install-recommends);
#   2. creates .venv from the pinned requirements.txt (re-installs only when it changes) and puts
#      the checkout's Python (site_scons/, the repository root) on its path with a .pth file;
#   3. runs `scons model=ds_cnn run` (skip with --no-run).
#
# Idempotent: a second run installs nothing and only re-runs the model.
# Options: --no-run (stop after installing), --help.
set -euo pipefail

cd "$(dirname "$0")"
RUN=1
for arg in "$@"; do
    case "$arg" in
        --no-run) RUN=0 ;;
        -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "setup.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
    esac
done

if [ -t 1 ]; then BOLD=$'\033[1m' PLAIN=$'\033[0m'; else BOLD= PLAIN=; fi
say() { printf '%ssetup:%s %s\n' "$BOLD" "$PLAIN" "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# --- 1. system packages -------------------------------------------------------------------------
# What each one is for: the Cortex-M55 cross compiler and its C library, the emulator, a host C
# compiler for the host runtime library and tests, Python with venv support.
PACKAGES=(gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi qemu-system-arm
          gcc libc6-dev python3 python3-venv clang libclang-rt-14-dev)
# The commands those packages provide, for machines without dpkg.
COMMANDS=(arm-none-eabi-gcc qemu-system-arm gcc python3)

if command -v dpkg >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    missing=()
    for pkg in "${PACKAGES[@]}"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        SUDO=()
        if [ "$(id -u)" -ne 0 ]; then
            command -v sudo >/dev/null 2>&1 || die "missing packages: ${missing[*]}; run as root or install them: apt-get install --no-install-recommends ${missing[*]}"
            SUDO=(sudo)
        fi
        say "installing ${missing[*]}"
        "${SUDO[@]}" apt-get update -qq
        DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
    else
        say "Debian packages present"
    fi
else
    for cmd in "${COMMANDS[@]}"; do
        command -v "$cmd" >/dev/null 2>&1 || die "$cmd not found and this is not a Debian system: install the equivalents of ${PACKAGES[*]}"
    done
fi
for cmd in "${COMMANDS[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || die "$cmd still not found after installing packages"
done

# --- 2. Python virtualenv -----------------------------------------------------------------------
PY=.venv/bin/python
if [ ! -x "$PY" ]; then
    say "creating .venv"
    python3 -m venv .venv || die "python3 -m venv failed: apt-get install python3-venv"
fi
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
have="$(cat .venv/.requirements.sha256 2>/dev/null || true)"
if [ "$want" != "$have" ]; then
    say "installing requirements.txt into .venv"
    "$PY" -m pip install -q --disable-pip-version-check -r requirements.txt
    echo "$want" > .venv/.requirements.sha256
else
    say ".venv matches requirements.txt"
fi

# The checkout's own Python (site_scons/: tigris_scons, tigris_tool; the repository root: models,
# bench, tests, docs) importable by name from every script run with .venv/bin/python, as
# pytest.ini's pythonpath makes it for the tests: no script adds paths itself. Rewritten on every
# run, so a moved checkout only needs ./setup.sh again.
site_packages="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
printf '%s\n%s\n' "$PWD" "$PWD/site_scons" > "$site_packages/tigris-scons-checkout.pth"

# --- 3. the proof -------------------------------------------------------------------------------
if ((RUN)); then
    say "scons model=ds_cnn run"
    exec .venv/bin/scons model=ds_cnn run
fi
