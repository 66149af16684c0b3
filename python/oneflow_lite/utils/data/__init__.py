"""``flow.utils.data``, as PyTorch's ``torch.utils.data``: datasets
(``Dataset``, ``TensorDataset``), samplers (``SequentialSampler``,
``RandomSampler``, ``BatchSampler``, ``DistributedSampler``: each process
its own rows) and ``DataLoader`` (batches collated into flow tensors)."""
from oneflow_lite.utils.data.dataloader import DataLoader, default_collate
from oneflow_lite.utils.data.dataset import Dataset, TensorDataset
from oneflow_lite.utils.data.sampler import (BatchSampler, DistributedSampler, RandomSampler,
                                             Sampler, SequentialSampler)

__all__ = ["Dataset", "TensorDataset", "Sampler", "SequentialSampler", "RandomSampler",
           "BatchSampler", "DistributedSampler", "DataLoader", "default_collate"]
