"""The zero-phase low-pass the analysis runs before differentiating: a Butterworth filter's
second-order sections designed as scipy.signal.butter designs them, run forward and backward
as scipy.signal.sosfiltfilt runs them (kernels.sos_filtfilt). Written out so that a run does
not import scipy.signal (0.3-0.4 s of every start-up: a user runs the command on one log as
often as on a thousand); test_analysis_filters.py holds both to scipy's numbers.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import kernels

#: the filter's order (docs/analysis.md: 4th-order Butterworth)
ORDER = 4


@functools.lru_cache(maxsize=64)
def butter_lowpass(order, cutoff, rate):
    """(sos, zi, pad) (shared: not to be written to): the sections of a Butterworth low-pass of even ``order`` at ``cutoff``
    Hz for samples at ``rate`` Hz (scipy.signal.butter(order, cutoff / (rate / 2),
    output='sos')), their steady-state initial conditions for a unit step
    (scipy.signal.sosfilt_zi) and sosfiltfilt's default padding (3 (2 sections + 1))."""
    if order % 2 or order < 2:
        raise ValueError(f'order must be even and >= 2, got {order}')
    wn = cutoff / (0.5 * rate)
    if not 0.0 < wn < 1.0:
        raise ValueError(f'the cut-off must be between 0 and half the sample rate, got {cutoff} '
                         f'Hz at {rate} Hz')
    # analog prototype (buttap), moved to the pre-warped cut-off (lp2lp_zpk), bilinear
    # transform at fs = 2 (bilinear_zpk): as scipy.signal.iirfilter does
    m = np.arange(-order + 1, order, 2)
    p = -np.exp(1j * math.pi * m / (2 * order))
    fs2 = 4.0
    warped = 2 * 2.0 * math.tan(math.pi * wn / 2.0)
    p = warped * p
    k = warped ** order
    pz = (fs2 + p) / (fs2 - p)
    k = k * np.real(1.0 / np.prod(fs2 - p))
    # sections: conjugate pole pairs, the pair nearest the unit circle last (zpk2sos's
    # 'nearest' pairing), two zeros at z = -1 each, the gain on the first
    upper = pz[pz.imag > 0]
    upper = upper[np.argsort(-np.abs(1.0 - np.abs(upper)))]
    sos = np.zeros((order // 2, 6))
    for s, pole in enumerate(upper):
        sos[s, :3] = np.poly([-1.0, -1.0])
        sos[s, 3:] = np.real(np.poly([pole, np.conj(pole)]))
    sos[0, :3] *= k
    zi = np.empty((sos.shape[0], 2))
    scale = 1.0
    for s in range(sos.shape[0]):
        b, a = sos[s, :3], sos[s, 3:]
        # lfilter_zi: (I - companion(a)^T) zi = b[1:] - a[1:] b[0]
        companion = np.array([[-a[1], -a[2]], [1.0, 0.0]])
        zi[s] = scale * np.linalg.solve(np.eye(2) - companion.T, b[1:] - a[1:] * b[0])
        scale *= b.sum() / a.sum()
    return sos, zi, 3 * (2 * sos.shape[0] + 1)


def filtfilt(x, cutoff, rate, order=ORDER):
    """Each column of x (n, k) low-passed at ``cutoff`` Hz forward and backward (zero phase);
    n must exceed the padding (15 samples at order 4)."""
    sos, zi, pad = butter_lowpass(order, float(cutoff), float(rate))
    x = np.ascontiguousarray(x, dtype=float)
    if x.shape[0] <= pad:
        raise ValueError(f'{x.shape[0]} samples: the filter needs more than {pad}')
    out = np.empty_like(x)
    kernels.sos_filtfilt(sos, zi, pad, x, out)
    return out


def gradient(x, dt):
    """numpy.gradient(x, dt, axis=0), in one compiled pass."""
    x = np.ascontiguousarray(x, dtype=float)
    out = np.empty_like(x)
    kernels.central_difference(x, float(dt), out)
    return out
