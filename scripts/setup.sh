#!/usr/bin/env bash
# Set up a venv (.venv) for rbd_ros on a machine without a ROS 2 install: the package (editable,
# with its extras), the ROS 2 wheels from PyPI (Kilted, or Jazzy with ROS_DISTRO=jazzy), and a
# wire-compatible tf2_msgs built from tools/tf2_msgs when `import tf2_msgs.msg` fails (recipe:
# shared/ros2-on-pypi.md). scripts/venv.sh says which venv and distribution (RBD_ROS_VENV,
# ROS_DISTRO, or what the venv already holds).
# Idempotent: a second run with unchanged inputs only checks imports and warms the numba cache.
# On a real ROS 2 install none of this is needed: colcon build + ros2 run/launch.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
source scripts/venv.sh
VENV=$RBD_ROS_VENV
DISTRO=$RBD_ROS_DISTRO
PY=$VENV/bin/python
PYTHON=${PYTHON:-python3}
STAMP=$VENV/.rbd_setup_stamp

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }
trap 'printf "[setup] ERROR: command failed (exit %s) at scripts/setup.sh line %s: %s\n" "$?" "$LINENO" "$BASH_COMMAND" >&2' ERR

# ROS 2 runtime wheels (shared/ros2-on-pypi.md): Kilted's are `ros-<package>`, Jazzy's
# `ros-jazzy-<package>` (metapackages pinning the Jazzy builds). Never add PyPI's `launch`: it is
# an unrelated 2017 project that would shadow ROS's launch.
RUNTIME=('rclpy[fastrtps]' sensor-msgs geometry-msgs std-msgs trajectory-msgs diagnostic-msgs
  visualization-msgs std-srvs nav-msgs rosgraph-msgs)
# Build-only wheels for tools/tf2_msgs. Jazzy has no ament_cmake_ros_core: its ament_cmake_ros
# needs gmock, gtest, pytest and python_cmake_module instead.
case $DISTRO in
  kilted)
    PREFIX=ros-
    TF2_BUILD=(rosidl-default-generators ament-cmake ament-package ament-cmake-include-directories
      rosidl-core-generators ament-cmake-ros-core) ;;
  jazzy)
    PREFIX=ros-jazzy-
    TF2_BUILD=(rosidl-default-generators ament-cmake ament-package ament-cmake-include-directories
      rosidl-core-generators ament-cmake-ros ament-cmake-gmock ament-cmake-gtest
      ament-cmake-pytest python-cmake-module) ;;
  *)
    die "ROS_DISTRO=$DISTRO: this set-up installs ROS 2 kilted (the default) or jazzy from PyPI \
(ROS_DISTRO=jazzy bash scripts/setup.sh); on a real ROS 2 install use colcon build instead" ;;
esac
if [[ -n $RBD_ROS_DISTRO_RECORDED && $RBD_ROS_DISTRO_RECORDED != "$DISTRO" ]]; then
  die "${VENV#$ROOT/} holds ROS 2 $RBD_ROS_DISTRO_RECORDED and ROS_DISTRO is $DISTRO: the two \
do not mix in one venv; use another (RBD_ROS_VENV=.venv-$DISTRO ROS_DISTRO=$DISTRO bash \
scripts/setup.sh) or remove ${VENV#$ROOT/} first"
fi
ROS_WHEELS=("${RUNTIME[@]/#/$PREFIX}")
TF2_BUILD_WHEELS=("${TF2_BUILD[@]/#/$PREFIX}" catkin-pkg)

pip_install() {
  # (filters the noise some pip configurations print about absent local index folders)
  "$PY" -m pip install -q --disable-pip-version-check "$@" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}

# The stamp is keyed on everything that decides what gets installed.
inputs_hash() {
  local files=(setup.py setup.cfg package.xml scripts/setup.sh scripts/venv.sh
    tools/tf2_msgs/CMakeLists.txt
    tools/tf2_msgs/package.xml tools/tf2_msgs/msg/*.msg)
  shopt -s nullglob
  files+=(requirements*.txt)
  shopt -u nullglob
  { echo "$DISTRO"; cat "${files[@]}"; } | sha256sum | cut -d' ' -f1
}
HASH=$(inputs_hash)

# numba's cache is filled (rbd_ros.warmup: minutes cold, on every core) in the background while
# the other packages install and tf2_msgs builds, once numba is in; the warm-up at the end then
# loads it (seconds) and compiles whatever is left (all of what the background one missed).
# RBD_ROS_WARMUP_AFTER (.ci/run): a lock file whose holder fills the numba cache this venv
# shares; each warm-up here waits for it, then finds the cache filled.
WARMUP_PID=
WARMUP_LOG=$VENV/.rbd_warmup.log
WAIT_TURN=()
if [[ -n ${RBD_ROS_WARMUP_AFTER:-} ]]; then WAIT_TURN=(flock "$RBD_ROS_WARMUP_AFTER"); fi
start_warmup() {
  if [[ -f rbd_ros/warmup.py ]]; then
    say "warming up numba kernels in the background (rbd_ros.warmup)"
    "${WAIT_TURN[@]}" "$PY" -m rbd_ros.warmup >"$WARMUP_LOG" 2>&1 &
    WARMUP_PID=$!
  fi
}
trap '[[ -n $WARMUP_PID ]] && kill "$WARMUP_PID" 2>/dev/null; true' EXIT

if [[ ! -x $PY ]]; then
  say "creating ${VENV#$ROOT/} (ROS 2 $DISTRO) with $($PYTHON --version 2>&1)"
  "$PYTHON" -m venv "$VENV"
fi
echo "$DISTRO" >"$VENV/.rbd_ros_distro"

IMPORT_CHECK='import rbd_ros, rclpy, numpy, lxml, numba, yaml, pytest, xdist, hypothesis, pinocchio, matplotlib, scipy, rosbags, distributed, xacro
import sensor_msgs.msg, geometry_msgs.msg, std_msgs.msg, trajectory_msgs.msg, diagnostic_msgs.msg
import std_srvs.srv, nav_msgs.msg, rosgraph_msgs.msg'

if [[ -f $STAMP && $(cat "$STAMP") == "$HASH" ]] && "$PY" -c "$IMPORT_CHECK" 2>/dev/null; then
  say "python packages up to date (stamp matches)"
else
  rm -f "$STAMP"
  # numba and numpy first (about 20 s), so that the warm-up compiles while the rest installs:
  # the rest resolves against them and changes neither (one resolve of everything, tried,
  # keeps the same versions), and the warm-up's processes import rbd_ros before pip re-installs
  # its editable link at the end
  say "installing rbd_ros (editable, [fast]: numba)"
  pip_install -e '.[fast]'
  start_warmup
  say "installing rbd_ros's extras [test,demo,analyze,xacro] and the ROS 2 $DISTRO wheels"
  pip_install -e '.[test,fast,demo,analyze,xacro]' "${ROS_WHEELS[@]}"
  "$PY" -c "$IMPORT_CHECK" || die "imports still fail after pip install"
  NEED_STAMP=1
fi

if "$PY" -c 'import tf2_msgs.msg' 2>/dev/null; then
  say "tf2_msgs importable"
else
  say "building tf2_msgs from tools/tf2_msgs (about 30 s)"
  command -v cmake >/dev/null || pip_install cmake
  pip_install "${TF2_BUILD_WHEELS[@]}"
  BUILD=$VENV/.tf2_msgs_build   # (per venv: a Kilted and a Jazzy venv build side by side)
  rm -rf "$BUILD"
  export PATH=$VENV/bin:$PATH AMENT_PREFIX_PATH=$VENV
  LOG=$BUILD.log
  {
    cmake -S tools/tf2_msgs -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
      -DCMAKE_PREFIX_PATH="$VENV" -DCMAKE_INSTALL_PREFIX="$VENV" -DPython3_EXECUTABLE="$PY" &&
      cmake --build "$BUILD" -j2 && cmake --install "$BUILD"
  } >"$LOG" 2>&1 || { tail -n 40 "$LOG" >&2; die "tf2_msgs build failed (full log: $LOG)"; }
  "$PY" -c 'import tf2_msgs.msg; tf2_msgs.msg.TFMessage()' || die "tf2_msgs built but not importable"
  rm -rf "$BUILD" "$LOG"
  say "tf2_msgs installed into ${VENV#$ROOT/}"
fi

if [[ ${NEED_STAMP:-0} == 1 ]]; then echo "$HASH" >"$STAMP"; fi

if [[ -n $WARMUP_PID ]]; then
  status=0
  wait "$WARMUP_PID" || status=$?
  WARMUP_PID=
  sed 's/^/  /' "$WARMUP_LOG"
  rm -f "$WARMUP_LOG"
  say "background warm-up: status $status"
fi
# pip writes the bytecode of what it installs, not of an editable install's sources: compile
# them here, or where PYTHONDONTWRITEBYTECODE is set (as on CI's machines) every process
# compiles the ~50 modules a node imports again, 0.15 s of CPU at each start. Only sources
# changed since are compiled (seconds the first time).
"$PY" -m compileall -q rbd_ros benchmarks >/dev/null || say "(compileall failed: processes compile the sources as they start)"
if [[ -f rbd_ros/warmup.py ]]; then
  say "warming up numba kernels (rbd_ros.warmup)"
  "${WAIT_TURN[@]}" "$PY" -m rbd_ros.warmup
fi
say "done"
