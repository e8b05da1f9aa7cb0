#!/usr/bin/env bash
# Builds the Python package's wheel for the GPU machine's Python into .gpu/wheels (ignored by git), for the
# device tool to carry with .gpu/; bench/gpu_python.sh installs it there. The GPU machine has no package
# registry, so the wheel is built here: against the tilevm libraries of BUILD_DIR (built by
# bench/prepare_gpu.sh or any `cmake --build`), for CPython GPU_PYTHON_VERSION (default 3.12, the image's),
# with an interpreter of that version found as pythonX.Y or under ~/.pyenv/versions. The extension links no
# libtorch and no CUDA library, so it needs nothing there beyond glibc and libstdc++.
#   bench/prepare_gpu_python.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
version=${GPU_PYTHON_VERSION:-3.12}
py=""
for candidate in "python$version" "$HOME"/.pyenv/versions/"$version"*/bin/python3; do
  if "$candidate" -c 'import sys' >/dev/null 2>&1; then py=$candidate; break; fi
done
[ -n "$py" ] || { echo "prepare_gpu_python.sh: no Python $version here (set GPU_PYTHON_VERSION)" >&2; exit 1; }
venv=$build/pyvenv-$version
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "nanobind>=2.0" "scikit-build-core>=0.10"
cmake --install "$build" --prefix "$build/install" >/dev/null
rm -rf .gpu/wheels && mkdir -p .gpu/wheels
launcher=()
command -v ccache >/dev/null && launcher=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
CMAKE_PREFIX_PATH="$PWD/$build/install" "$venv/bin/python" -m pip wheel -q --no-deps --no-build-isolation \
  "${launcher[@]}" -w .gpu/wheels ./python
ls -la .gpu/wheels
