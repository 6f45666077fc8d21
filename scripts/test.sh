#!/usr/bin/env bash
# Set up .venv (scripts/setup.sh) and run the whole test suite. Extra arguments go to pytest,
# e.g. `bash scripts/test.sh -k ros -x`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh

# ROS 2 tests talk over real DDS on loopback only; each test process picks its own domain id
# (test/conftest.py). Logs go to a temporary directory that is removed afterwards.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
ROS_LOG_DIR=$(mktemp -d -t rbd_ros_log.XXXXXX)
export ROS_LOG_DIR
trap 'rm -rf "$ROS_LOG_DIR"' EXIT

echo "[test] .venv/bin/python -m pytest -q test $*"
.venv/bin/python -m pytest -q test "$@"
