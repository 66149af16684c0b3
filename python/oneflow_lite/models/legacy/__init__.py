"""The models as GraphBuilder builders (``init_params`` + ``build``), kept
for the code that still builds graphs by hand (tests/python/
test_distributed.py, test_models.py, bench/ops_gpt.py, bench/runtime_dp.py,
train.py). The nn.Module definitions in ``oneflow_lite.models`` are the
frontend's models; these go once their users move to flow.nn.Graph.
"""
