#!/usr/bin/env bash
# Installs what tilevm needs to build and test on a Debian 12 machine (the kind CI runs on). Safe to run
# again: apt-get skips what is already there.
set -euo pipefail
packages=(cmake ninja-build g++ clang libclang-rt-dev clang-format libfmt-dev libcli11-dev nlohmann-json3-dev libgtest-dev librapidcheck-dev libxxhash-dev python3-venv python3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
