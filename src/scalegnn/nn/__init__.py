"""GNN layers (one family per module) and complete models."""
from scalegnn.nn.models import GraphSAINTNet, build_model, parse_arch, weighted_loss
from scalegnn.nn.saint import SAINTLayer

__all__ = ["GraphSAINTNet", "SAINTLayer", "build_model", "parse_arch", "weighted_loss"]
