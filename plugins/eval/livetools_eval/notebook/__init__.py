"""Notebooks in the eval family: `eval` with `notebook=` opens an .ipynb under the root, runs its
cells in a kernel of its own (chosen from its kernelspec among the run's kernels), edits its
cells, and saves it as valid nbformat through the run's compare-and-swap write.

cells.py holds the nbformat model (reading, checking, addressing, edits, outputs as Jupyter
saves them), runner.py the notebook's kernel and the loop over its cells, tool.py the ops.
nbformat loads at the first notebook call, not with the plugin."""
