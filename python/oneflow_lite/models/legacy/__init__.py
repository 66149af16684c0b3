"""The models as GraphBuilder builders (``init_params`` + ``build``), kept
only for python/oneflow_lite/train.py, which still builds its graph by hand.
The nn.Module definitions in ``oneflow_lite.models`` are the frontend's
models (tests and bench trace them with ``models.trace_loss``); this package
goes when train.py moves to flow.nn.Graph.
"""
