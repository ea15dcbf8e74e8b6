#!/usr/bin/env bash
# Installs the system packages svcops' lab and tests run on: a real PostgreSQL, OpenSSH server,
# GnuPG, dpkg and a real service supervisor; systemd-nspawn, apt-ftparchive and sudo for the lab's
# hosts booted with systemd; headless Chromium (the HTML report's tests) and
# Prometheus' promtool and Pushgateway (the metrics' tests); a C++ compiler, make and python3 for
# ssh2's native crypto binding, which this script never builds (`npm run build:ssh2-binding` does,
# when asked). Called by the npm `pre*` hooks, so `npm install && npm test` and
# `npm install && npm run demo` work on a fresh Debian or Ubuntu machine.
# Idempotent: when every binary is present it does nothing. As non-root, or off Debian, it stops
# and prints the exact command to run.
#
# SVCOPS_EXTRA_PACKAGES: more Debian packages, separated by spaces, each a package name (Debian
# Policy 5.6.1: lower-case letters, digits, + - and ., starting with a letter or digit, at least
# two characters), optionally pinned to a version (`name=version`, the version starting with a
# digit, of letters, digits and . + ~ : -). Anything else is refused before anything runs: each
# word reaches root's apt-get as an argument, where a word like -o... would be an option.
set -euo pipefail

# binary -> Debian package that provides it
declare -A needs=(
  [psql]=postgresql-client
  [pg_dump]=postgresql-client
  [pg_restore]=postgresql-client
  [sshd]=openssh-server
  [ssh-keygen]=openssh-client
  [gpg]=gnupg
  [zstd]=zstd
  [dpkg-deb]=dpkg
  [supervisord]=supervisor
  [ps]=procps
  [runuser]=util-linux
  [useradd]=passwd
  [curl]=curl
  # The lab's systemd hosts (svcops lab up --host-kind systemd, test/hosts): machines booted with
  # systemd, the signed apt repository they install from, and the sudo of their unprivileged user.
  [systemd-nspawn]=systemd-container
  [apt-ftparchive]=apt-utils
  [sudo]=sudo
  [nsenter]=util-linux
  [chromium]=chromium
  [promtool]=prometheus
  [prometheus-pushgateway]=prometheus-pushgateway
  [systemd-analyze]=systemd
  # The cluster suite on the Kubernetes API stand-in (test/cluster, the `cluster` project of `npm test`).
  [kubectl]=kubernetes-client
  # ssh2's native crypto binding, built by `npm run build:ssh2-binding` (scripts/ssh2-binding.js).
  [g++]=g++
  [make]=make
  [python3]=python3
)
# Split on blanks and newlines without pathname expansion (a word like * stays a word, and is refused).
read -r -d '' -a extra <<<"${SVCOPS_EXTRA_PACKAGES:-}" || true
for p in ${extra[@]+"${extra[@]}"}; do
  if [[ ! "$p" =~ ^[a-z0-9][a-z0-9+.-]+(=[0-9][A-Za-z0-9.+~:-]*)?$ ]]; then
    printf "SVCOPS_EXTRA_PACKAGES: the word %q is not a Debian package name; expected names like libpq-dev or libpq-dev=15.8-0+deb12u1 (lower-case letters, digits, + - and ., at least two characters, starting with a letter or digit; a version after = starting with a digit).\n" "$p" >&2
    exit 2
  fi
done

missing=()
for bin in "${!needs[@]}"; do
  if ! command -v "$bin" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$bin" ]; then
    missing+=("${needs[$bin]}")
  fi
done
# The server binaries live outside PATH on Debian.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  missing+=(postgresql)
fi
for p in ${extra[@]+"${extra[@]}"}; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
# unique, sorted
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
cmd="apt-get install -y --no-install-recommends ${missing[*]}"

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "svcops needs system packages that are not installed: ${missing[*]}." >&2
  echo "Install them with: sudo apt-get update && sudo $cmd" >&2
  exit 1
fi

echo "svcops: installing system packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# Debian's postgresql-common creates and starts a default cluster on install; the lab never uses
# it (it runs throwaway clusters on free ports), so keep the package from creating one.
mkdir -p /etc/postgresql-common
if [ ! -f /etc/postgresql-common/createcluster.conf ]; then
  echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf
fi
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends ${missing[*]} >/dev/null
echo "svcops: system packages installed." >&2
