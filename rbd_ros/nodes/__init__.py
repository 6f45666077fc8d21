"""The rbd_ros nodes, one class each: DynamicsNode (dynamics.py: gravity, inverse and forward
dynamics, effort commands), FramesNode (frames.py: TF), SimNode (sim.py: a simulated robot).
Each is a thin adapter over rbd_ros.dynamics on the shared plumbing of rbd_ros.ros."""
