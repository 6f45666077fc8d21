"""ament_python package; also installs with plain `pip install -e .`."""
from glob import glob

from setuptools import find_packages, setup

package_name = 'rbd_ros'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'benchmarks', 'benchmarks.*']),
    package_data={package_name: ['robots/*.urdf', 'robots/LICENSE*']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.py')),
        ('share/' + package_name + '/config', glob('config/*.yaml')),
        ('share/' + package_name + '/robots', glob('rbd_ros/robots/*.urdf')),
    ],
    python_requires='>=3.10',
    install_requires=['numpy', 'lxml', 'PyYAML'],
    extras_require={
        # numba >= 0.56: the oldest measured (README: numba versions); tbb: numba's fork-safe
        # threading layer for batches (rbd_ros/dynamics/_jit.py loads it from the wheel)
        'fast': ['numba>=0.56', 'tbb; platform_system == "Linux" and platform_machine == "x86_64"'],
        'demo': ['matplotlib'],         # the demo's plot
        # a robot_description_file or --urdf named *.xacro is expanded with xacro (ROS's, on PyPI)
        'xacro': ['xacro'],
        # python -m rbd_ros analyze: rosbag2 logs without ROS, filters, Dask, plots
        # (lz4 and zstd: MCAP chunks, read by rbd_ros/analysis/mcap.py as rosbags reads them)
        'analyze': ['rosbags>=0.10', 'lz4', 'backports.zstd; python_version < "3.14"',
                    'dask[distributed]', 'matplotlib'],
        # pin (Pinocchio) is the test oracle; example-robot-data the corpus of public robots;
        # mujoco only for the simulator's side-by-side benchmark (benchmarks/sim_bench.py);
        # colcon builds the package as a ROS workspace does (test_ros_startup)
        'test': ['pytest', 'pytest-timeout', 'pytest-xdist', 'hypothesis', 'pin',
                 'example-robot-data==6.0.0', 'scipy', 'mujoco', 'colcon-common-extensions'],
    },
    zip_safe=True,
    maintainer='rbd_ros maintainers',
    maintainer_email='maintainers@rbd-ros.invalid',
    description='Rigid-body dynamics nodes and a ROS-independent dynamics core.',
    license='BSD-3-Clause',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'dynamics_node = rbd_ros.nodes.dynamics:main',
            'frames_node = rbd_ros.nodes.frames:main',
            'sim_node = rbd_ros.nodes.sim:main',
            'bringup = rbd_ros.bringup:main',
            'warmup = rbd_ros.warmup:main',
            'rbd_analyze = rbd_ros.analysis.cli:main',
        ],
    },
)
