"""Independent numpy reference implementations of the reference models.

Forward and hand-written backward passes of the MLP, GPT and VGG models of
``oneflow_lite.models`` and the SGD, Adam and AdamW optimizers, written with
numpy only (this package never imports oneflow_lite). They take a params
dict (parameter name -> array; ``state_dict.from_state_dict`` makes it from
a model's state_dict) and the same batches as the models, and compute in
the dtype of the params they are given (float64 for oracles). Configs are
duck-typed: any object with the model config's fields will do.

``test_reference.py`` checks every gradient against a central finite
difference, so this oracle is itself checked.
"""
