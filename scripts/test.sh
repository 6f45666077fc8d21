#!/usr/bin/env bash
# Set up the venv (scripts/setup.sh: .venv, ROS 2 Kilted; ROS_DISTRO=jazzy for Jazzy, RBD_ROS_VENV
# for another venv) and run the whole test suite: the tests that start no node on one process
# per core, then the ROS tests one at a time (below). Extra arguments go to one pytest run of
# the whole suite instead, e.g. `bash scripts/test.sh -k ros -x`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
source scripts/venv.sh

# ROS 2 tests talk over real DDS on loopback only; each test process picks its own domain id
# (test/conftest.py), or takes ROS_DOMAIN_ID when it is set. Logs go to a temporary directory
# that is removed afterwards.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
ROS_LOG_DIR=$(mktemp -d -t rbd_ros_log.XXXXXX)
export ROS_LOG_DIR
trap 'rm -rf "$ROS_LOG_DIR"' EXIT

PYTEST=("$RBD_ROS_VENV/bin/python" -m pytest -q test)
if [[ $# -gt 0 ]]; then
    echo "[test] ${RBD_ROS_VENV#$PWD/}/bin/python -m pytest -q test $* (ROS 2 $RBD_ROS_DISTRO)"
    "${PYTEST[@]}" "$@"
    exit
fi
# The whole suite in two runs: the tests that start no node (core, simulator, CLI, analysis:
# CPU-bound, independent) on one process per core (pytest-xdist), then the ROS tests one at a
# time, as their timing checks (rates, latencies, real time) assume the cores are theirs.
echo "[test] ${RBD_ROS_VENV#$PWD/}/bin/python -m pytest -q test -m 'not ros' -n auto, then -m ros (ROS 2 $RBD_ROS_DISTRO)"
first=0
"${PYTEST[@]}" -m "not ros" -n auto || first=$?
second=0
"${PYTEST[@]}" -m ros || second=$?
if [[ $first != 0 ]]; then exit "$first"; fi
exit "$second"
