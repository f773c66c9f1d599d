#!/usr/bin/env bash
# The one command that runs every test of kbroker on a fresh Debian machine
# that has only Go: it installs the tools the tests drive (kcat, and gcc for
# the race detector), then builds, vets and tests every package.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*"; }

# as_root runs a command as root, through sudo only when we are not root.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	else
		sudo "$@"
	fi
}

# apt_install installs Debian packages, refreshing the package lists only if
# the first attempt fails (a fresh machine may have none).
apt_install() {
	export DEBIAN_FRONTEND=noninteractive
	if ! as_root apt-get install -y --no-install-recommends "$@"; then
		as_root apt-get update
		as_root apt-get install -y --no-install-recommends "$@"
	fi
}

step "go version"
go version

missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
if [ "${#missing[@]}" -gt 0 ]; then
	step "installing ${missing[*]}"
	apt_install "${missing[@]}"
fi
step "kcat: $(command -v kcat)"

step "go build ./..."
go build ./...

step "go vet ./..."
go vet ./...

# Both test steps run even if the first fails, so one run reports every
# failure; the script fails if either did.
failed=()

# The race detector needs cgo; compat tests drive a separate broker process,
# so they gain nothing from it and run without.
mapfile -t unit_pkgs < <(go list ./... | grep -v '/compat$' || true)
if [ "${#unit_pkgs[@]}" -gt 0 ]; then
	step "go test -race (${#unit_pkgs[@]} packages)"
	CGO_ENABLED=1 go test -race -count=1 -timeout 20m "${unit_pkgs[@]}" || failed+=("unit tests")
fi

step "go test ./compat/ (real clients against real kbroker processes)"
go test -count=1 -timeout 20m ./compat/ || failed+=("compat tests")

if [ "${#failed[@]}" -gt 0 ]; then
	step "FAILED: ${failed[*]}"
	exit 1
fi
step "all tests passed"
