# Sourced by setup.sh, test.sh and demo.sh (run from the repository root): which virtual
# environment and which ROS 2 distribution.
#   RBD_ROS_VENV   the venv (default .venv)
#   RBD_ROS_DISTRO the distribution whose PyPI wheels go into it: kilted or jazzy. From
#                  ROS_DISTRO when set (`ROS_DISTRO=jazzy bash scripts/setup.sh`), else the one
#                  recorded in the venv by an earlier set-up, else kilted.
# A venv holds one distribution (PyPI's kilted `ros-*` and jazzy `ros-jazzy-*` wheels must not
# mix): for both side by side, a second venv (RBD_ROS_VENV=.venv-jazzy, as .ci/run does).
RBD_ROS_VENV=${RBD_ROS_VENV:-.venv}
[[ $RBD_ROS_VENV == /* ]] || RBD_ROS_VENV=$PWD/$RBD_ROS_VENV
RBD_ROS_VENV=${RBD_ROS_VENV%/}
RBD_ROS_DISTRO_RECORDED=$(cat "$RBD_ROS_VENV/.rbd_ros_distro" 2>/dev/null || true)
RBD_ROS_DISTRO=${ROS_DISTRO:-${RBD_ROS_DISTRO_RECORDED:-kilted}}
export RBD_ROS_VENV RBD_ROS_DISTRO
