"""rbd_ros.simulation: a simulated robot with real joints, independent of ROS (sim_node is its
ROS adapter). See simulator.py for the step."""
from .simulator import INTEGRATORS, POSITION_LIMITS, SimOptions, Simulator

__all__ = ['Simulator', 'SimOptions', 'INTEGRATORS', 'POSITION_LIMITS']
