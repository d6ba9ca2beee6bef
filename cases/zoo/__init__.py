"""Model-zoo pairs: the packages' own models on both sides (torchvision, transformers and
mindcv; mindone's parameter tables for BERT and GPT-2), compared with no hand-written name map.
The models live in ``cases.models.zoo_vision`` and ``cases.models.zoo_text``."""
