#!/usr/bin/env bash
# Set up the venv (scripts/setup.sh: .venv, ROS 2 Kilted; ROS_DISTRO=jazzy for Jazzy, RBD_ROS_VENV
# for another venv) and run the whole test suite in three parts (below): the tests that start no
# node on one process per core, the ROS tests on three, then the ROS tests that read the clock one
# at a time. Extra arguments go to one pytest run of the whole suite instead, e.g.
# `bash scripts/test.sh -k ros -x`.
#   RBD_ROS_TEST_FILTER  a -m expression every part keeps (CI's Jazzy run: "not one_distro")
#   RBD_ROS_TEST_PARTS   which parts run: "core ros" (the default), or "ros"
#   RBD_ROS_WAIT_FOR     a lock file to wait for before the ROS tests (CI sets up Jazzy's venv
#                        under it meanwhile)
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
# The whole suite in three runs: the tests that start no node (core, simulator, CLI, analysis:
# CPU-bound, independent) on one process per core (pytest-xdist); the ROS tests on three
# processes (each has its own DDS domain; they start nodes and mostly wait for what those say,
# with timeouts: 104 s on three, 128 s on two, about 240 s on one, on 2 cores);
# then the `alone` ones (test/conftest.py ALONE: rates, latencies, CPU shares, real time, closed
# loops over DDS) one at a time, as their checks assume the cores are theirs. A ROS_DOMAIN_ID
# set by the user puts every test on that one domain: then the ROS tests run one at a time.
FILTER=${RBD_ROS_TEST_FILTER:-}
PARTS=${RBD_ROS_TEST_PARTS:-core ros}
ROS_WORKERS=3
if [[ -n ${ROS_DOMAIN_ID:-} ]]; then ROS_WORKERS=0; fi
status=0
part() {   # a -m expression, then pytest's other arguments; "no tests selected" (5) is fine
  local expression=$1
  shift
  if [[ -n $FILTER ]]; then expression="($expression) and ($FILTER)"; fi
  echo "[test] -m '$expression' $*"
  local rc=0
  "${PYTEST[@]}" -m "$expression" "$@" || rc=$?
  if [[ $rc != 0 && $rc != 5 && $status == 0 ]]; then status=$rc; fi
}
echo "[test] ${RBD_ROS_VENV#$PWD/}/bin/python -m pytest -q test, in parts (ROS 2 $RBD_ROS_DISTRO)"
if [[ " $PARTS " == *" core "* ]]; then part "not ros" -n auto; fi
if [[ " $PARTS " == *" ros "* ]]; then
  if [[ -n ${RBD_ROS_WAIT_FOR:-} ]]; then
    echo "[test] waiting for $RBD_ROS_WAIT_FOR"
    flock "$RBD_ROS_WAIT_FOR" true
  fi
  if [[ $ROS_WORKERS == 0 ]]; then
    part "ros"
  else
    part "ros and not alone" -n "$ROS_WORKERS"
    part "ros and alone"
  fi
fi
exit "$status"
