#!/usr/bin/env bash
# Set up .venv (scripts/setup.sh) and run the demo on the bundled 7-DoF arm: bringup with the
# simulated arm, dynamics and frames in one process (loop closed by gravity compensation), a live
# table, then a summary; it stops by itself after a few seconds (or Ctrl-C).
# Extra arguments go to the demo (e.g. a URDF path, --duration 10).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh

export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
ROS_LOG_DIR=${ROS_LOG_DIR:-$(mktemp -d -t rbd_ros_log.XXXXXX)}
export ROS_LOG_DIR

if [[ -f rbd_ros/demo.py ]]; then
  exec .venv/bin/python -m rbd_ros.demo "$@"
else
  exec .venv/bin/python -m rbd_ros inspect "${1:-rbd_ros/robots/rbd_arm7.urdf}"
fi
