"""Model builders (fp32 ONNX -> int8 QDQ ONNX) for the tigris-scons firmware builds.

Importable with the repository root on ``sys.path`` (``from models.qdq import quantize_qdq``).
"""
