"""Import both frameworks before any in-process pytester run: pytester restores sys.modules
afterwards, and torch cannot be imported twice in one process."""

import mindspore  # noqa: F401
import torch  # noqa: F401
