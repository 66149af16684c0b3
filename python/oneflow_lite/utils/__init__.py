"""``flow.utils``: ``data`` (datasets, samplers, DataLoader)."""
from oneflow_lite.utils import data  # noqa: F401
