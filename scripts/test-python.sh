#!/usr/bin/env bash
# Builds the Python package (python/) against the CMake build in BUILD_DIR and runs its tests (pytest, CPU:
# the interpreter; the GPU tests skip themselves without a GPU). Part of the README's test command, so CI
# runs it. Fails when pytest fails or collects no test.
#
#   scripts/test-python.sh [BUILD_DIR]        default build/; the C++ library must be built there
#
# The virtual environment is BUILD_DIR/pyvenv (numpy, pytest, nanobind, scikit-build-core and the CPU
# tests' torch: TILEVM_TEST_TORCH=0 leaves torch out, and its tests are then skipped). The library is
# installed into BUILD_DIR/install and found by find_package(tilevm), so only the extension's own files are
# compiled here.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
venv=$build/pyvenv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
"${pip[@]}" numpy pytest "nanobind>=2.0" "scikit-build-core>=0.10"
if [ "${TILEVM_TEST_TORCH:-1}" != 0 ]; then
  start=$(date +%s)
  "${pip[@]}" torch
  echo "test-python: torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)') ready in $(( $(date +%s) - start )) s"
fi
cmake --install "$build" --prefix "$build/install" >/dev/null
launcher=()
command -v ccache >/dev/null && launcher=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
CMAKE_PREFIX_PATH="$PWD/$build/install" "${pip[@]}" --no-build-isolation "${launcher[@]}" ./python
# From the repository root, so that `import tilevm` finds the installed package, not python/tilevm.
status=0
"$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests || status=$?
if [ "$status" -eq 5 ]; then
  echo "test-python: pytest collected no test" >&2
fi
exit "$status"
