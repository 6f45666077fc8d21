"""`--plots DIR`: one PNG per joint, the measured and the model's torque over time (the logs one
after another) above a histogram of the residual."""
from __future__ import annotations

import os

import numpy as np


def write_plots(directory, model, results):
    """The paths of the PNG files written (matplotlib, no display needed)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    from .compute import joint_rows
    os.makedirs(directory, exist_ok=True)
    ok = [r for r in results if r.status == 'ok' and r.series is not None]
    written = []
    for j, name in enumerate(joint_rows(model)[0]):
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6.5),
                                          gridspec_kw={'height_ratios': [3, 2]})
        offset = 0.0
        for k, r in enumerate(ok):
            s = r.series
            t = s['t'] - s['t'][0] + offset
            top.plot(t, s['measured'][:, j], color='C0', lw=0.8,
                     label='measured' if k == 0 else None)
            top.plot(t, s['model'][:, j], color='C1', lw=0.8, label='model' if k == 0 else None)
            if k:
                top.axvline(offset, color='0.8', lw=0.5)
            offset = t[-1] + (t[-1] - t[0]) * 0.01
        unit = 'N' if model.joint[name].type == 'prismatic' else 'N m'
        top.set_xlabel('time (s), logs one after another' if len(ok) > 1 else 'time (s)')
        top.set_ylabel(f'torque ({unit})')
        top.set_title(f'{model.name}: {name}')
        top.legend(loc='upper right')
        residual = np.concatenate([r.series['residual'][:, j] for r in ok])
        bottom.hist(residual, bins=80, color='C2')
        bottom.set_xlabel(f'residual = measured - model ({unit}): mean {residual.mean():.3g}, '
                          f'rms {np.sqrt(np.mean(residual ** 2)):.3g}')
        bottom.set_ylabel('samples')
        fig.tight_layout()
        path = os.path.join(directory, f'{name}.png')
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written
