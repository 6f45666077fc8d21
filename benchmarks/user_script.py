"""The script a user would write to get torque residuals out of rosbag2 logs (the baseline of
`python -m benchmarks analyze`): rosbags' reader and deserializer (a message object per
sample), numpy's gradient for the accelerations, one Pinocchio RNEA per sample.

    python benchmarks/user_script.py ROBOT.urdf LOG...
"""
import sys

import numpy as np
import pinocchio as pin
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore


def main(urdf, paths):
    typestore = get_typestore(Stores.ROS2_KILTED)
    model = pin.buildModelFromUrdf(urdf)
    data = model.createData()
    samples = 0
    for path in paths:
        t, q, v, tau = [], [], [], []
        with Reader(path) as reader:
            for connection, _, raw in reader.messages():
                if connection.topic != '/joint_states':
                    continue
                msg = typestore.deserialize_cdr(raw, connection.msgtype)
                t.append(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
                q.append(msg.position)
                v.append(msg.velocity)
                tau.append(msg.effort)
        t, q, v, tau = (np.array(x) for x in (t, q, v, tau))
        a = np.gradient(v, t, axis=0)
        residual = np.empty_like(tau)
        for k in range(t.size):
            residual[k] = tau[k] - pin.rnea(model, data, q[k], v[k], a[k])
        samples += t.size
        print(path, 'residual rms', np.sqrt(np.mean(residual ** 2, axis=0)).round(4))
    print(f'{samples} samples')


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2:])
