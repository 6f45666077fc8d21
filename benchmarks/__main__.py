"""Every benchmark in one run, or one of them:

    .venv/bin/python -m benchmarks [dynamics | sim | sim_node | nodes | analyze] [--smoke]
    .venv/bin/python -m benchmarks analyze --fleet K --seconds S --workers 1,2,4,8,16

1. ``dynamics``: the dynamics core against Pinocchio, side by side: per-call medians and
   batched throughput (benchmarks/dynamics_bench.py);
2. ``sim``: the simulator's step against MuJoCo's on the same URDF, dt and contacts: us per
   step and the real-time factor (benchmarks/sim_bench.py);
3. ``sim_node``: sim_node's tick with a legged robot at publish_rate 1000: us per tick as
   each output gains a subscriber, the real-time factor it keeps, and a lying A1 at
   real_time_factor 0 with its /diagnostics period (benchmarks/sim_node_bench.py);
4. ``nodes`` (or ``node``): dynamics_node at 1 kHz against a bare rclpy relay on the same
   transport: added latency percentiles, lost messages, CPU, resident memory, start-up; then
   the CPU per output enabled, one dynamics_node per configuration beside the relay
   (benchmarks/node_bench.py);
5. ``analyze``: ``python -m rbd_ros analyze`` end to end on rosbag2 logs against the script a
   user would write, each stage's time, the start-up, 1 and 2 Dask workers; with ``--fleet``,
   the table of a fleet of logs on 1, 2, 4, ... workers (benchmarks/analyze_bench.py).

``--smoke`` runs them for a few seconds (the test suite does, so they never rot; nothing in the
tests asserts a time).

Beside them, the fuzz and soak campaign against the running nodes (minutes; see
benchmarks/campaign.py): ``.venv/bin/python -m benchmarks.campaign``.
"""
import argparse

from benchmarks import analyze_bench, dynamics_bench, node_bench, sim_bench, sim_node_bench


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m benchmarks',
                                     description='rbd_ros benchmarks, all in one run')
    parser.add_argument('which', nargs='?',
                        choices=('all', 'dynamics', 'sim', 'sim_node', 'nodes', 'node',
                                 'analyze'),
                        default='all', help='one benchmark (default: all of them; node is '
                        'nodes)')
    parser.add_argument('--smoke', action='store_true', help='a few seconds in all')
    args, rest = parser.parse_known_args(argv)
    if rest and args.which != 'analyze':
        parser.error(f'unrecognized arguments: {" ".join(rest)} (only analyze takes more: '
                     'python -m benchmarks analyze --help)')
    if rest:
        return analyze_bench.main(rest + (['--smoke'] if args.smoke else []))
    status = 0
    if args.which in ('all', 'dynamics'):
        print('## rbd_ros.dynamics vs Pinocchio\n')
        dynamics_bench.run(smoke=args.smoke)
    if args.which in ('all', 'sim'):
        print('\n## the simulator\'s step vs MuJoCo\n', flush=True)
        status |= sim_bench.run(smoke=args.smoke)
    if args.which in ('all', 'sim_node'):
        print('\n## sim_node\'s tick at 1 kHz with a legged robot\n', flush=True)
        status |= sim_node_bench.run(smoke=args.smoke)
    if args.which in ('all', 'nodes', 'node'):
        print('\n## dynamics_node at 1 kHz vs a bare rclpy relay\n', flush=True)
        status |= node_bench.main(['--smoke'] if args.smoke else [])
    if args.which in ('all', 'analyze'):
        print('\n## python -m rbd_ros analyze on rosbag2 logs\n', flush=True)
        status |= analyze_bench.run(smoke=args.smoke)
    return status


if __name__ == '__main__':
    raise SystemExit(main())
