"""Every benchmark in one run:

    .venv/bin/python -m benchmarks [--smoke]

1. the dynamics core against Pinocchio, side by side: per-call medians and batched throughput
   (benchmarks/dynamics_bench.py);
2. dynamics_node at 1 kHz against a bare rclpy relay on the same transport: added latency
   percentiles, lost messages, CPU, resident memory, start-up (benchmarks/node_bench.py).

``--smoke`` runs both for a few seconds (the test suite does, so they never rot; nothing in the
tests asserts a time).

Beside them, the fuzz and soak campaign against the running nodes (minutes; see
benchmarks/campaign.py): ``.venv/bin/python -m benchmarks.campaign``.
"""
import argparse

from benchmarks import dynamics_bench, node_bench


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m benchmarks',
                                     description='rbd_ros benchmarks, all in one run')
    parser.add_argument('--smoke', action='store_true', help='a few seconds in all')
    args = parser.parse_args(argv)
    print('## rbd_ros.dynamics vs Pinocchio\n')
    dynamics_bench.run(smoke=args.smoke)
    print('\n## dynamics_node at 1 kHz vs a bare rclpy relay\n', flush=True)
    return node_bench.main(['--smoke'] if args.smoke else [])


if __name__ == '__main__':
    raise SystemExit(main())
