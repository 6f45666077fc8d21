#!/usr/bin/env bash
# Set up the venv (scripts/setup.sh: .venv; ROS_DISTRO=jazzy for ROS 2 Jazzy) and run the demo on
# the bundled 7-DoF arm: the simulated arm and the dynamics node in one process, the loop closed
# by computed-torque feedforward control of a trajectory (three runs: no payload, an unmodelled
# 2 kg payload, the payload announced), a live table, then a summary and a plot; it stops by
# itself after about 27 s of simulated time.
# Extra arguments go to the demo (python -m rbd_ros.demo --help: a URDF path, --payload KG,
# --plot PATH, --legged for the Solo-12 quadruped, --ankle for the parallel ankle's closed loops).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
source scripts/venv.sh          # (the venv setup.sh made: .venv unless RBD_ROS_VENV says)

export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
ROS_LOG_DIR=${ROS_LOG_DIR:-$(mktemp -d -t rbd_ros_log.XXXXXX)}
export ROS_LOG_DIR

if [[ -f rbd_ros/demo.py ]]; then
  exec "$RBD_ROS_VENV/bin/python" -m rbd_ros.demo "$@"
else
  exec "$RBD_ROS_VENV/bin/python" -m rbd_ros inspect "${1:-rbd_ros/robots/rbd_arm7.urdf}"
fi
